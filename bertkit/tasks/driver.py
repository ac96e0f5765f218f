"""The one fine-tuning driver: runs any :class:`~bertkit.tasks.base.Task`.

``finetune ner|re|dep|...`` all go through :func:`finetune`; a task supplies data reading,
encoding, its model and metrics (:mod:`bertkit.tasks.base`), the driver does the rest in this
order, so that bad settings or data stop the run before anything is written:

1. check the settings (``cfg.validate()``), resolve the model and the run directory, refuse a
   ``--max-length`` beyond the encoder's positions (:mod:`bertkit.inputs.lengths`);
2. read the data, applying ``--split-from-dev`` (:func:`split_from_dev`) and ``--max-*-samples``;
3. seed, let the task build its model and batches, create the run directory, write ``config.yaml``;
4. train with best-on-dev selection (:func:`bertkit.training.train`), take the decisions made on
   dev with the final model (:meth:`~bertkit.tasks.base.TaskRun.choose`), score test, save ``model/``,
   write ``results.json``, then the test predictions and plots (rank 0 only under ``torchrun``),
   so that a drawing problem never costs the model or the results.

``--seeds 1,2,3`` runs steps 1-4 once per seed in ``<output>/seed-<N>/`` (one after another, also
under ``torchrun``) and writes ``<output>/summary.json``: mean, sample standard deviation and
the 95% interval of the mean (Student's t, n-1 degrees of freedom) of every dev and test metric,
as SciBERT reports the mean over seeds (Beltagy et al. 2019, §4).
"""

from __future__ import annotations

import contextlib
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from bertkit.settings.layers import config_yaml, field_defaults, replace, to_dict
from bertkit.errors import BertkitError
from bertkit.tasks.base import Task, TaskData, score_scale
from bertkit.tasks.common import warn_shared
from bertkit.tasks.seed_stats import NOT_METRICS, seed_statistics, seed_summary  # noqa: F401

SPLIT_KEYS = ("train", "dev", "test")


def parse_seeds(text: str | int | Sequence[int] | None) -> list[int]:
    """Seeds from ``--seeds`` (``"1,2,3"``, a list from a recipe, or one int); [] for None.

    >>> parse_seeds("1, 2,3")
    [1, 2, 3]

    Raises:
        BertkitError: a value that is not an integer, an empty item (``1,,2``: a typo, not two
            seeds), or a seed given twice.
    """
    if text is None or text == "":
        return []
    items = [text] if isinstance(text, int) else \
        str(text).replace(" ", "").strip("[]").split(",") if isinstance(text, str) else list(text)
    if any(str(x) == "" for x in items):
        raise BertkitError(f"--seeds is {text!r}: an empty item",
                           expected="integers separated by single commas, e.g. 1,2,3")
    try:
        seeds = [int(x) for x in items]
    except ValueError:
        raise BertkitError(f"--seeds is {text!r}", expected="integers separated by commas, "
                                                            "e.g. 1,2,3") from None
    if len(set(seeds)) != len(seeds) or not seeds:
        raise BertkitError(f"--seeds is {text!r}", expected="distinct integers, e.g. 1,2,3")
    return seeds


def split_from_dev(examples: list, fraction: float) -> tuple[list, list]:
    """``(train, held_out)``: every ``1/fraction``-th example of ``examples`` held out.

    The held-out examples are spread evenly over the file (example ``k`` is held out when
    ``floor((k+1) * fraction)`` steps up), so the split is the same on every run and machine and
    ``evaluate --split dev`` can rebuild it; with ``fraction = 0.1`` these are examples 9, 19, 29,
    ... (the GENIA split bertkit has always used).

    >>> split_from_dev(list(range(20)), 0.1)[1]
    [9, 19]
    """
    step = Fraction(fraction).limit_denominator(10_000)
    held = [(k + 1) * step // 1 > k * step // 1 for k in range(len(examples))]
    return ([x for x, h in zip(examples, held) if not h], [x for x, h in zip(examples, held) if h])


def _has_train(task: Task, data: str) -> bool:
    """Whether ``data`` has a train file (True when unsure: the task's loader then reports)."""
    from bertkit.data.sets import resolve_local

    try:
        if resolve_local(data, task.data_kind, task.extensions, ("dev", "test")) is None:
            return True  # registered set not on disk: the hub loader has all splits
    except BertkitError:
        return True
    try:
        resolve_local(data, task.data_kind, task.extensions, ("train",))
    except BertkitError as exc:
        return "broken link" in exc.message  # True: the loader names the link
    return True


def load_splits(task: Task, cfg, console=None) -> TaskData:
    """Read train/dev/test of ``cfg.data``, applying ``cfg.split_from_dev`` and the sample limits.

    A set without a train file is trained on dev less a held-out fraction (which becomes dev, for
    model selection) when ``cfg.split_from_dev`` is set, or by default (0.1) for a registered set
    released that way (GENIA) and for a task with a ``default_split_from_dev`` (dep, as it always
    did); otherwise a directory without a train file is refused, naming the option.

    With a split, ``data.info["split_from_dev"]`` records ``train``/``dev``: the examples
    trained on and selected by (after ``--max-train-samples``/``--max-eval-samples``), and
    ``split_train``/``split_dev``: the split's own sizes (dev file less the held-out part, the
    held-out part).

    Examples of dev or test that also occur in train (the same input) are warned about with the
    count and the first few (:func:`bertkit.tasks.common.warn_shared`) and counted in
    ``data.info["shared_with_train"]``.

    Raises:
        BertkitError: a directory without a train file and no ``--split-from-dev``; a split
            that leaves train or dev empty; whatever the task's reader raises.
    """
    from bertkit.data.sets import entry

    fraction, automatic = cfg.split_from_dev, False
    if fraction is None and not _has_train(task, cfg.data):
        default = getattr(task, "default_split_from_dev", None)
        if entry(task.data_kind, cfg.data) is None and default is None:
            raise BertkitError(f"no train file in {cfg.data}", file=cfg.data,
                               expected="a train file, or --split-from-dev 0.1 to train on dev "
                                        "less a held-out tenth (used as dev)")
        fraction, automatic = default or 0.1, True
    if fraction is None:
        data = task.load(cfg, SPLIT_KEYS, console)
    else:
        data = task.load(cfg, ("dev", "test"), console)
        source = data.sources["dev"]
        train, held = split_from_dev(data.splits["dev"], fraction)
        if not train or not held:
            raise BertkitError(f"--split-from-dev {fraction} leaves {len(train)} training and "
                               f"{len(held)} held-out examples of {len(data.splits['dev'])}",
                               file=source, expected="a dev file with enough examples for both")
        every = 1 / fraction
        every_text = f"{every:.0f}th" if abs(every - round(every)) < 1e-9 else f"{every:.3g}th"
        item = task.unit[:-1] if task.unit.endswith("s") else task.unit  # "sentence"
        data.splits = {"train": train, "dev": held, "test": data.splits["test"]}
        data.sources = {"train": f"{source} (less every {every_text} {item})",
                        "dev": f"{source} (every {every_text} {item})",
                        "test": data.sources["test"]}
    data.full_train = data.splits["train"]  # the label set comes from all of it
    for split, limit in (("train", cfg.max_train_samples), ("dev", cfg.max_eval_samples),
                         ("test", cfg.max_eval_samples)):
        if limit is not None:
            whole = data.splits[split]
            data.splits[split] = whole[:limit]
            if split != "train":  # train's label set comes from the whole file (full_train)
                _warn_capped_labels(whole, data.splits[split], split, limit, task.unit, console)
    if fraction is not None:
        # counts after --max-*-samples: what is trained on and selected by; the split's own
        # sizes (dev file less the held-out part, held-out part) under split_train/split_dev
        used_train, used_dev = len(data.splits["train"]), len(data.splits["dev"])

        def count(used: int, whole: int, option: str) -> str:
            return str(used) if used == whole else f"first {used} of {whole}, {option} {used}"

        why = f"no train split in {cfg.data}" if automatic else f"--split-from-dev {fraction}"
        data.note = (f"{why}: training on {Path(source).name} less every {every_text} {item} "
                     f"({count(used_train, len(train), '--max-train-samples')}), held out for "
                     f"model selection (dev, {count(used_dev, len(held), '--max-eval-samples')}); "
                     f"reporting on {Path(data.sources['test']).name}")
        data.info["split_from_dev"] = {"fraction": fraction, "source": source,
                                       "train": used_train, "dev": used_dev,
                                       "split_train": len(train), "split_dev": len(held),
                                       "automatic": automatic}
    shared = warn_shared(data.splits, task.unit, console)  # the same input in train and dev/test
    if shared:
        data.info["shared_with_train"] = shared
    return data


def _label_set(examples) -> set:
    """The distinct labels of examples that carry a ``label`` (a string or a list of them);
    empty for examples without one (tags, spans, scores)."""
    out = set()
    for ex in examples:
        label = getattr(ex, "label", None)
        if isinstance(label, str):
            out.add(label)
        elif isinstance(label, (list, tuple)):
            out.update(x for x in label if isinstance(x, str))
    return out


def _warn_capped_labels(whole, kept, split: str, limit: int, unit: str, console) -> None:
    """Warn when ``--max-eval-samples`` (the first N examples of a file) keeps fewer labels than
    the file has: a label-sorted file (PubMedQA's test starts with 50 ``yes``) gives a split
    whose scores and collapse check say little."""
    if console is None or len(kept) >= len(whole):
        return
    full, have = _label_set(whole), _label_set(kept)
    if len(have) >= len(full):
        return
    from rich.markup import escape

    missing = sorted(full - have)
    shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
    console.print(f"[yellow]warning:[/] --max-eval-samples {limit} keeps the first {len(kept)} of "
                  f"{len(whole)} {split} {unit}: {len(have)} of the file's {len(full)} labels "
                  f"(missing: {escape(shown)}); its scores cover those labels only (is the file "
                  f"sorted by label?)", highlight=False)


def finetune(task: Task, cfg, console=None) -> dict:
    """Fine-tune ``task`` with settings ``cfg``; several seeds when ``cfg.seeds`` is set.

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, the task's
    ``test_predictions.*`` and ``model/`` under ``cfg.output_dir`` (with seeds: one such folder
    per seed, ``seed-<N>/``, and ``summary.json``).

    Returns:
        the results dict also written to ``results.json`` (with seeds: the summary); on a
        non-main process of a multi-process run only ``{"task", "rank", "steps"}``.

    Raises:
        BertkitError: bad settings, data, model or output directory, all before training.
    """
    cfg.validate()
    resolve = getattr(cfg, "resolve_registered", None)
    if resolve is not None:  # settings that follow a registered set's name, decided as typed
        resolve()  # (before a directory of that name becomes an absolute path)
    seeds = parse_seeds(cfg.seeds)
    if seeds:
        return finetune_seeds(task, cfg, seeds, console)
    return _finetune_one(task, cfg, console)


def _finetune_one(task: Task, cfg, console=None) -> dict:
    from bertkit.data.sets import canonical_data
    from bertkit.encoders import attention_note, default_model, resolve_model_source
    from bertkit.io import atomic_path, write_json, write_text
    from bertkit.outputs.modelcard import write_model_card
    from bertkit.inputs.lengths import check_length, model_position_limit
    from bertkit.training import train
    from bertkit.training.prefetch import Prefetcher
    from bertkit.training.devices import is_main_process, make_runtime, rank, seed_everything
    from bertkit.training.rundir import check_run_dir, default_run_dir, prepare_run_dir
    from bertkit.training.tracking import start_tracking

    cfg.data = canonical_data(cfg.data)
    model_name = resolve_model_source(cfg.model or default_model())
    run_dir = Path(cfg.output_dir) if cfg.output_dir else default_run_dir(task.name, cfg.data)
    cfg.output_dir = str(run_dir)
    settings = {**to_dict(cfg), "model": model_name}
    check_run_dir(run_dir, cfg.resume, cfg.overwrite, settings, field_defaults(cfg),
                  command=f"finetune {task.name}")
    attention = attention_note(model_name)  # also refuses a family bertkit does not support
    check_length(cfg.max_length, model_position_limit(model_name))
    if attention and console and is_main_process():
        console.print(f"note: {attention}", highlight=False, markup=False)
    from bertkit.vocab.match import check_tokenizer_matches

    check_tokenizer_matches(model_name)  # a swapped-in vocabulary reads other words' rows
    runtime = make_runtime(cfg.device, cfg.precision, console)
    data = load_splits(task, cfg, console)
    from bertkit.data.contamination import check_contamination  # test text the encoder saw

    data.info.update(check_contamination(task.data_kind, cfg.data, model_name, console))
    seed_everything(cfg.seed)
    prepared = task.prepare(cfg, model_name, data, runtime, console)
    run_dir = prepare_run_dir(run_dir, cfg.resume, cfg.overwrite)
    main = is_main_process()  # rank 0 writes every output of a multi-process run
    if main:
        write_text(run_dir / "config.yaml", config_yaml(settings, cfg))
    if console and main:
        if data.note:  # plain text: labels and paths in it are never read as markup
            console.print(f"note: {data.note}", highlight=False, markup=False)
        if prepared.summary:
            console.print(prepared.summary, highlight=False, markup=False)
    tracker = start_tracking(cfg, run_dir, settings, f"finetune {task.name}",
                                        console) if main else None
    with tracker or contextlib.nullcontext():  # an error ends the MLflow run as failed
        # collate (and packing plans) built ahead of the step by a worker thread, pinned with CUDA
        result = train(prepared.model, Prefetcher(prepared.batches, depth=2), cfg, runtime, run_dir,
                       evaluate=prepared.evaluate,
                       select_metric=prepared.select_metric or task.select_metric,
                       console=console if main else None,
                       score_scale=score_scale(task, prepared.select_metric or task.select_metric),
                       tracker=tracker)
        if not main:
            return {"task": task.name, "rank": rank(), "steps": result.steps}
        chosen = prepared.choose(prepared.model)  # decisions on dev: not in predict_seconds
        start = time.perf_counter()  # forward passes and decoding (as Trainer.predict)
        scored = prepared.test(prepared.model, console)
        predict_seconds = time.perf_counter() - start
        with atomic_path(run_dir / "model") as tmp:
            prepared.save(prepared.model, tmp)
        n_train = len(data.splits["train"])
        results = {
            "task": task.name, "data": cfg.data, "model": model_name,
            "best_epoch": result.best_epoch, "dev": result.best_record, "test": scored.metrics,
            "train_seconds": result.train_seconds,
            f"train_{task.unit}_per_second": cfg.examples_trained(n_train, result.steps)
            / max(result.train_seconds, 1e-9),
            "predict_seconds": predict_seconds, "steps": result.steps,
            "select_metric": prepared.select_metric or task.select_metric,
            **data.info, **prepared.results, **({"chosen_on_dev": chosen} if chosen else {}),
        }
        write_json(run_dir / "results.json", results)
        write_model_card(run_dir / "model", results, task.card, cfg)  # model/README.md
        scored.write(run_dir)  # predictions and plots last: the model and results are kept already
        if tracker is not None:  # --report-to mlflow: results, curves and model card
            tracker.finish(run_dir, results)
        return results


def finetune_seeds(task: Task, cfg, seeds: list[int], console=None) -> dict:
    """Run ``cfg`` once per seed in ``<output_dir>/seed-<N>/`` and summarise (module docstring).

    Every seed folder is checked before the first seed trains. With ``--resume`` a seed whose
    folder has ``results.json`` is kept as it is, one with a checkpoint is resumed, one without
    (never started, or stopped before its first checkpoint) is started again. A seed is kept or
    resumed only when its saved ``config.yaml`` holds the same settings (but those a resume may
    change, :data:`~bertkit.training.rundir.RESUME_MAY_CHANGE`); otherwise the run is refused,
    naming each differing setting, or with ``--overwrite`` that seed is trained again. A stopped seed's
    message names ``--resume --output-dir <output_dir>``, which continues all the seeds.

    Returns:
        the summary (also ``summary.json``): ``seeds``, ``runs`` (folder per seed),
        ``select_metric`` (the dev metric the runs chose their best epoch by: the task's, or the
        one a setting chose, e.g. ``finetune ner --metric token-macro``) and ``metrics``: ``{"dev"|"test": {metric: {mean, std, ci95_low, ci95_high, n, values}}}``.

    Raises:
        BertkitError: a seed folder that holds a run (without ``--resume``/``--overwrite``),
            a kept seed trained with other settings (``--resume`` without ``--overwrite``),
            and whatever a single run raises.
    """
    from bertkit.data.sets import canonical_data
    from bertkit.io import write_json
    from bertkit.training.devices import is_main_process, rank
    from bertkit.training.rundir import default_run_dir

    data = canonical_data(cfg.data)
    root = Path(cfg.output_dir) if cfg.output_dir else default_run_dir(task.name, data)
    cfg.data, cfg.output_dir = data, str(root)
    if (root / "results.json").is_file() and not cfg.overwrite:
        raise BertkitError("output directory holds a single-seed run", file=root,
                           expected="another --output-dir for a --seeds run, or --overwrite")
    runs = _plan_seeds(cfg, seeds, root)
    results = _run_seeds(task, runs, len(seeds), root, console)
    if not is_main_process():
        return {"task": task.name, "rank": rank(), "seeds": seeds}
    summary = seed_summary(task, data, seeds, root, results)
    write_json(root / "summary.json", summary)
    return summary


def _plan_seeds(cfg, seeds: list[int], root: Path) -> list[tuple[int, Any, bool]]:
    """``(seed, its settings, kept as it is)`` per seed, every seed folder checked (the resume
    rules of :func:`finetune_seeds`).

    Raises:
        BertkitError: a seed folder that holds a run (without ``--resume``/``--overwrite``), or
            kept seeds trained with other settings (``--resume`` without ``--overwrite``).
    """
    from bertkit.encoders import default_model, resolve_model_source
    from bertkit.training.rundir import (_holds_run, check_run_dir, resumable,
                                         settings_differences)

    runs, changed = [], []
    model_name = None
    for seed in seeds:
        sub = replace(cfg, seed=seed, seeds=None, output_dir=str(root / f"seed-{seed}"))
        folder = Path(sub.output_dir)
        done = cfg.resume and (folder / "results.json").is_file()
        if cfg.resume and not resumable(folder):  # the one resume rule (rundir.resumable)
            # never started, or stopped before its first checkpoint: nothing to continue, so
            # start it again (its partial files, e.g. metrics.jsonl, are replaced)
            sub.resume, sub.overwrite = False, _holds_run(folder)
        elif cfg.resume:  # a kept or continued seed must have been trained with these settings
            if model_name is None:
                model_name = resolve_model_source(cfg.model or default_model())
            diffs = settings_differences(folder, {**to_dict(sub), "model": model_name},
                                         field_defaults(sub))
            if diffs and not cfg.overwrite:
                changed.append(f"seed {seed} ({'; '.join(diffs)})")
                continue
            # --overwrite with --resume: a seed trained otherwise starts again, the rest are kept
            sub.resume, sub.overwrite = not diffs, bool(diffs)
            done = done and not diffs
        if not done:
            check_run_dir(Path(sub.output_dir), sub.resume, sub.overwrite)
        runs.append((seed, sub, done))
    if changed:
        raise BertkitError(
            "--resume would keep seeds trained with other settings, and the summary would mix "
            "them: " + "; ".join(changed), file=root,
            expected="the settings those seeds were trained with, --resume --overwrite to train "
                     "the differing seeds again (the others are kept), or another --output-dir")
    return runs


def _run_seeds(task: Task, runs: list, n_seeds: int, root: Path, console) -> dict:
    """``{seed: results}``: each planned seed trained (or its kept ``results.json`` read).

    Raises:
        BertkitError: whatever a single run raises; a stopped seed's message names ``--resume
            --output-dir <root>``, which continues every seed.
    """
    import json

    from bertkit.training.devices import is_main_process
    from bertkit.training.rundir import RunStopped

    results = {}
    for i, (seed, sub, done) in enumerate(runs, 1):
        if console and is_main_process():
            console.rule(f"seed {seed} ({i} of {n_seeds})"
                         + (": finished earlier, kept" if done else ""))
        if done:
            results[seed] = json.loads((Path(sub.output_dir) / "results.json").read_text("utf-8"))
        else:
            try:
                results[seed] = _finetune_one(task, sub, console)
            except RunStopped as stop:  # continue every seed, not only this one
                raise stop.continue_with(f"the same command with --resume --output-dir {root} "
                                         f"(finished seeds are kept)") from None
    return results
