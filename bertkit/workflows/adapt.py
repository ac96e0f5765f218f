"""``bertkit adapt``: vocabulary extension, DAPT and/or TAPT, then fine-tuning, as one workflow.

Stages, each in its own sub-folder of the output directory and each skipped when that folder
holds a finished stage with the same settings and input (``stage.json``), so a killed run
continues where it stopped; a stage recorded with other settings (or another input or text) is
refused, naming each setting, by the one rule of :mod:`bertkit.workflows.stages` (``--overwrite``
runs every stage again):

1. ``vocab/`` (``--extend-vocab N``): ``bertkit vocab extend``, up to N whole words of a
   vocabulary (SciVocab by default) that the model splits, ranked by the adaptation text.
2. ``pretrain/dapt/`` (``--corpus``): continued MLM on a domain corpus (DAPT).
3. ``pretrain/tapt/`` (``--task-text``): continued MLM on the task's own training text (TAPT) for
   ``--tapt-epochs`` passes; the text (``pretrain/task_text.txt``) comes from
   :func:`~bertkit.workflows.task_text.task_text_lines`, i.e. the fine-tuning readers.
4. ``finetune/`` (``finetune/seed-N/`` with several ``--seeds``): fine-tuning on the task.
5. ``baseline/`` (``--compare``): the same fine-tuning from the unadapted model.

``summary.json`` (rewritten after every stage) holds the settings, each stage's outcome and the
test scores (mean and sample standard deviation over seeds, in points).

Reference:
    Gururangan et al. (2020), "Don't Stop Pretraining": DAPT sec. 3, TAPT sec. 4, DAPT + TAPT
    sec. 5; Beltagy et al. (2019), SciBERT (SciVocab); Joshi et al. (2020), SpanBERT (masking).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Callable

from bertkit.settings.layers import field_defaults, sources_line
from bertkit.errors import BertkitError
from bertkit.io import json_plain
from bertkit.workflows.adapt_config import DAPT_STEPS, AdaptConfig
from bertkit.workflows.scores import comparison_table, score_summary, task_metrics
from bertkit.workflows.stages import (continue_run, input_fingerprint, run_stage,
                                      text_fingerprint)
from bertkit.workflows.task_text import task_text_lines

WAY_FORWARD = ("the earlier run's settings to continue it, another --output-dir, or --overwrite "
               "to run every stage again")
"""What a stage recorded with other settings is refused with (the one rule)."""

# The task's settings class, fine-tuning function, headline metrics (task_metrics) and TAPT text
# all come from the task registry (bertkit.tasks.registry): adapt has no task table.


def _entry(task: str):
    from bertkit.tasks.registry import TASKS as REGISTRY, load_attr

    entry = REGISTRY[task]
    return load_attr(entry.config), load_attr(entry.finetune)


def _given(**values) -> dict:
    return {k: v for k, v in values.items() if v is not None}


def finetune_config(cfg: AdaptConfig, model: str, output_dir: Path, seed: int,
                    seeds: list[int] | None = None):
    """The task's fine-tuning settings, built as ``finetune`` builds them
    (:func:`bertkit.workflows.command_settings.build_settings`): task defaults < the data set's dev-chosen recipe
    for adapt's base encoder (``--model``, the packaged one when not given: the adapted model
    and the ``--compare`` baseline fine-tune alike) < ``finetune_recipe`` < adapt's fine-tuning
    options and (model, seed, ``seeds``: the driver's ``--seeds``) given here. The config
    carries the settings-source line (``config.yaml``'s header; :func:`finetune_runs` prints it).

    Raises:
        BertkitError: a bad recipe or option (named), or settings out of range.
    """
    from bertkit.workflows.command_settings import build_settings

    cls = _entry(cfg.task)[0]
    own = _given(data=cfg.data, epochs=cfg.epochs, lr=cfg.lr, batch_size=cfg.batch_size,
                 max_train_samples=cfg.max_train_samples, max_eval_samples=cfg.max_eval_samples,
                 device=cfg.device, precision=cfg.precision)
    own.update(model=model, seed=seed)
    fixed = {"output_dir": str(output_dir), "overwrite": True, "resume": False}
    if "seeds" in {f.name for f in dataclasses.fields(cls)}:  # several: the driver's --seeds
        own["seeds"] = ",".join(map(str, seeds)) if seeds and len(seeds) > 1 else None
    ft = build_settings(cls, f"finetune {cfg.task}", flags=own, recipe=cfg.finetune_recipe,
                        fixed=fixed, encoder=cfg.model,
                        source=cfg.finetune_recipe or "adapt options").config
    ft.validate()
    return ft


def pretrain_config(cfg: AdaptConfig, model: str, corpus: str, output_dir: Path,
                    steps: int | None = None):
    """A pretraining stage's settings, built as ``pretrain`` builds them
    (:func:`bertkit.workflows.command_settings.build_settings`): pretrain defaults < {max_steps: 300} <
    ``pretrain_recipe`` < adapt's pretraining options < (model, corpus, seed, ``steps``) given
    here.

    Raises:
        BertkitError: a bad recipe or option, or ``--head-warmup-steps`` on a bertkit without it.
    """
    from bertkit.settings.layers import field_names
    from bertkit.settings.recipe_files import load_recipe
    from bertkit.workflows.command_settings import build_settings
    from bertkit.tasks.pretrain import PretrainConfig

    if cfg.head_warmup_steps is not None and "head_warmup_steps" not in field_names(PretrainConfig):
        raise BertkitError("--head-warmup-steps is not available in this bertkit's pretraining",
                           expected="no --head-warmup-steps")
    recipe = {"max_steps": DAPT_STEPS, **(load_recipe(cfg.pretrain_recipe, "pretrain")
                                          if cfg.pretrain_recipe else {})}
    own = _given(masking=cfg.masking, lr=cfg.pretrain_lr, batch_size=cfg.pretrain_batch_size,
                 max_seq_length=cfg.max_seq_length, head_warmup_steps=cfg.head_warmup_steps,
                 max_steps=cfg.pretrain_steps if steps is None else steps, valid=cfg.valid,
                 device=cfg.device, precision=cfg.precision, cache_dir=cfg.cache_dir)
    own.update(model=model, corpus=corpus, seed=cfg.seed)
    fixed = {"output_dir": str(output_dir), "overwrite": True, "resume": False, "config": None,
             "vocab": None}
    pt = build_settings(PretrainConfig, "pretrain", flags=own, recipe=recipe, fixed=fixed,
                        source=cfg.pretrain_recipe or "adapt options").config
    pt.validate()
    return pt


def tapt_steps(pt, text_file: str | Path, epochs: int) -> tuple[int, int]:
    """Optimiser steps for ``epochs`` passes over ``text_file`` packed as ``pt`` packs it.

    Returns:
        (steps, packed sequences of ``pt.max_seq_length`` tokens in one pass).

    Raises:
        BertkitError: the text is shorter than one sequence.
    """
    from bertkit.encoders import load_tokenizer
    from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus

    tok = load_tokenizer(pt.model)
    seqs = PackedSequences(tokenize_corpus([text_file], tok, pt.cache_dir), pt.max_seq_length,
                           tok.cls_token_id, tok.sep_token_id)
    if len(seqs) == 0:
        raise BertkitError(f"the task text is shorter than one sequence of {pt.max_seq_length} "
                           f"tokens", file=text_file, expected="more text or a smaller "
                                                               "--max-seq-length")
    per_step = pt.batch_size * pt.gradient_accumulation
    return epochs * math.ceil(len(seqs) / per_step), len(seqs)


def _check_root(root: Path, overwrite: bool) -> None:
    if root.is_file():
        raise BertkitError("is a file", file=root, expected="a run directory")
    if root.is_dir() and any(root.iterdir()) and not (root / "summary.json").is_file() \
            and not overwrite:
        raise BertkitError("the output directory holds something other than an adapt run",
                           file=root, expected="an empty or new directory, an earlier adapt "
                                               "run (to continue it), or --overwrite")


RUN_KEYS = ("test", "dev", "best_epoch", "train_seconds", "model")  # summary.json, per run


def finetune_runs(cfg: AdaptConfig, model: str, folder: Path, label: str, console=None) -> list[dict]:
    """Fine-tune ``model`` into ``folder`` as one stage: one run, or with several seeds the
    driver's ``--seeds`` (``folder/seed-N``, its resume rules: a finished seed kept, a stopped one
    continued; :func:`bertkit.tasks.driver.finetune_seeds`).

    Returns:
        the results of each run, in seed order (``test``, ``dev``, ``best_epoch``,
        ``train_seconds``, ``model``).
    """
    import json

    fn = _entry(cfg.task)[1]
    seeds = cfg.seed_list()
    ft = finetune_config(cfg, model, folder, seeds[0], seeds)

    def runs(results: dict) -> dict:
        if len(seeds) == 1:
            return {"runs": [{k: results.get(k) for k in RUN_KEYS}]}
        read = [json.loads((folder / f"seed-{s}" / "results.json").read_text(encoding="utf-8"))
                for s in seeds]
        return {"runs": [{k: r.get(k) for k in RUN_KEYS} for r in read]}

    if console:
        console.print(f"{label}: {sources_line(ft)}", highlight=False, markup=False)
    run, resume = continue_run(fn, ft, console, None)
    settings = {k: v for k, v in dataclasses.asdict(ft).items() if k not in ("overwrite", "resume")}
    settings["input"] = input_fingerprint(model)
    name = f"{label} (seed {seeds[0]})" if len(seeds) == 1 else f"{label} (seeds {cfg.seeds})"
    return run_stage(name, folder, settings, lambda: runs(run()), cfg.overwrite, console,
                     lambda: runs(resume()), way_forward=WAY_FORWARD,
                     defaults=field_defaults(ft))["runs"]


def extend_stage(cfg: AdaptConfig, model: str, ranking: list[str], folder: Path,
                 console=None) -> tuple[str, dict]:
    """Vocabulary extension of ``model`` into ``folder/model`` (``cfg.extend_vocab`` words of
    ``cfg.extend_vocab_from``, ranked by the ``ranking`` text files), or skipped when done.

    Returns:
        (the extended model's directory, the stage record: sizes, added words, seconds).

    Reference:
        Beltagy et al. (2019), SciBERT, sec. 2 (SciVocab); see :mod:`bertkit.vocab.extend`.
    """
    out = folder / "model"

    def extend() -> dict:
        from bertkit.vocab.extend import extend_model

        info = extend_model(model, out, add=cfg.extend_vocab, vocab=cfg.extend_vocab_from,
                            corpus=ranking or None, overwrite=True)
        return {**{k: info[k] for k in ("old_size", "new_size", "added", "seconds")},
                "words": [w["word"] for w in info["words"][:20]]}

    res = run_stage("vocabulary extension", folder, {
        "model": model, "input": input_fingerprint(model), "add": cfg.extend_vocab,
        "vocab": cfg.extend_vocab_from, "corpus": ranking, "text": text_fingerprint(ranking)},
        extend, cfg.overwrite, console, way_forward=WAY_FORWARD)
    return str(out), {"model": str(out), **res}


def pretrain_stage(cfg: AdaptConfig, name: str, model: str, corpus: str, folder: Path,
                   console=None) -> tuple[str, dict]:
    """Continued MLM pretraining of ``model`` on ``corpus`` into ``folder`` (skipped when done):
    ``name`` ``dapt`` runs ``cfg.pretrain_steps`` steps, ``tapt`` ``cfg.tapt_epochs`` passes.

    Returns:
        (``folder/model``, the stage record: steps, losses, seconds, masking; TAPT adds
        ``epochs`` and ``sequences_per_epoch``).

    Reference:
        Gururangan et al. (2020), sec. 3 (DAPT) and 4 (TAPT).
    """
    pt = pretrain_config(cfg, model, corpus, folder)
    extra = {}
    if name == "tapt":
        steps, extra["sequences_per_epoch"] = tapt_steps(pt, corpus, cfg.tapt_epochs)
        pt, extra["epochs"] = pretrain_config(cfg, model, corpus, folder, steps), cfg.tapt_epochs

    from bertkit.tasks.pretrain import pretrain

    if console:
        console.print(f"{name.upper()} pretraining: {sources_line(pt)}", highlight=False,
                      markup=False)
    run, resume = continue_run(pretrain, pt, console,
                            ("steps", "train", "valid", "valid_initial", "train_seconds",
                             "tokens_per_second", "masking"))
    settings = {k: v for k, v in dataclasses.asdict(pt).items() if k not in ("overwrite", "resume")}
    settings["input"], settings["text"] = input_fingerprint(model), text_fingerprint(corpus)
    res = run_stage(f"{name.upper()} pretraining", folder, settings, run, cfg.overwrite, console,
                    resume, way_forward=WAY_FORWARD, defaults=field_defaults(pt))
    return str(folder / "model"), {"model": str(folder / "model"), **extra, **res}


def adapt(cfg: AdaptConfig, console=None) -> dict:
    """Run the adaptation stages, fine-tune, and with ``compare`` the unadapted baseline.

    Args:
        cfg: the settings (validated here before any stage runs).
        console: a rich console for progress and the final table (None: silent).

    Returns:
        the summary written to ``summary.json``: ``settings``, ``stages`` (each stage's product
        and outcome), ``model`` (the adapted encoder), ``adapted`` and, with ``compare``,
        ``baseline`` (see :func:`score_summary`) and ``difference`` (adapted - baseline mean, in
        points, per metric).

    Raises:
        BertkitError: bad settings or recipe, a missing data set or corpus, or any stage's own
            error.

    Reference:
        Gururangan et al. (2020), sec. 3-5 (DAPT, TAPT, DAPT + TAPT).
    """
    import time

    from bertkit.encoders import default_model
    from bertkit.io import write_json, write_text
    from bertkit.training.devices import make_runtime
    from bertkit.training.rundir import RunStopped

    cfg.validate()
    root = Path(cfg.output_dir or f"runs/adapt-{cfg.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    cfg.output_dir = str(root)
    base = cfg.model or default_model()
    # every config is built (and checked) before the first stage runs
    ft_probe = finetune_config(cfg, base, root / "finetune", cfg.seed_list()[0])
    make_runtime(ft_probe.device, ft_probe.precision, console)  # the precision and why, first
    text_spec = cfg.task_text
    if text_spec == "task" and not Path(text_spec).exists():
        text_spec = f"{cfg.task}:{ft_probe.data}"
    if cfg.corpus:
        pretrain_config(cfg, base, cfg.corpus, root / "pretrain" / "dapt")
    _check_root(root, cfg.overwrite)
    root.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"settings": json_plain(dataclasses.asdict(cfg)), "stages": {}}

    def save() -> None:
        write_json(root / "summary.json", summary)

    text_file = None
    if text_spec:
        # TAPT on the task's own data reads the examples fine-tuning trains on: the first
        # --max-train-samples of them when that is given (Gururangan et al. 2020, sec. 4)
        own = text_spec == f"{cfg.task}:{ft_probe.data}"
        lines = task_text_lines(text_spec, cfg.max_train_samples if own else None)
        text_file = root / "pretrain" / "task_text.txt"
        text_file.parent.mkdir(parents=True, exist_ok=True)
        new = "".join(line + "\n" for line in lines)
        if not text_file.is_file() or text_file.read_text(encoding="utf-8") != new:
            write_text(text_file, new)
        summary["stages"]["task_text"] = {"source": text_spec, "file": str(text_file),
                                          "sentences": len(lines),
                                          "max_examples": cfg.max_train_samples if own else None}
    if cfg.overwrite or not (root / "summary.json").is_file():  # marks the folder an adapt run;
        save()  # an earlier run's summary stays until a stage ends (one refused leaves it whole)
    try:
        model = _stages(cfg, root, base, text_file, summary, save, console)
    except RunStopped as stop:
        raise stop.continue_with(
            f"the same bertkit adapt command with --output-dir {root}: finished stages are "
            f"skipped and this one continues from step {stop.step}") from None
    if console:
        console.print(comparison_table(summary, f"{cfg.task}: {ft_probe.data}"))
        console.print(f"run directory: {root} (adapted encoder: {model}; summary.json)",
                      highlight=False)
    return summary


def _stages(cfg: AdaptConfig, root: Path, base: str, text_file: Path | None, summary: dict,
            save: Callable[[], None], console=None) -> str:
    """The stages of :func:`adapt` after the task text, filling ``summary`` (saved after each);
    returns the adapted encoder's directory."""
    model = base
    if cfg.extend_vocab:
        from bertkit.data.sets import split_paths

        ranking = split_paths(cfg.corpus or "") + ([str(text_file)] if text_file else [])
        model, summary["stages"]["vocab"] = extend_stage(cfg, base, ranking, root / "vocab", console)
        save()
    for name, corpus in (("dapt", cfg.corpus), ("tapt", str(text_file) if text_file else None)):
        if corpus:
            model, summary["stages"][name] = pretrain_stage(
                cfg, name, model, corpus, root / "pretrain" / name, console)
            save()
    summary["model"] = model
    runs = finetune_runs(cfg, model, root / "finetune", "fine-tuning", console)
    summary["adapted"] = score_summary(task_metrics(cfg.task), runs)
    save()
    if cfg.compare:
        runs = finetune_runs(cfg, base, root / "baseline", "baseline fine-tuning", console)
        summary["baseline"] = score_summary(task_metrics(cfg.task), runs)
        summary["difference"] = {k: summary["adapted"][k]["mean"] - summary["baseline"][k]["mean"]
                                 for k in summary["adapted"]}
        save()
    return model
