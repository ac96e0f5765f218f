"""``finetune qa``, ``evaluate qa`` and ``predict qa``: extractive question answering as a
:class:`~bertkit.tasks.base.Task`, run by the shared driver.

BERT's setup for SQuAD (Devlin et al., 2019, §4.2-4.3), as Hugging Face ``run_qa.py`` runs it:
``[CLS] question [SEP] context window [SEP]`` inputs (:mod:`bertkit.tasks.qa.encoding`), a
start and an end logit per piece, the best span pooled over all windows of a question
(:mod:`bertkit.tasks.qa.decode`), scored by the official SQuAD scorers
(:mod:`bertkit.metrics.qa`); best epoch by dev F1.

SQuAD 2.0 mode (``--unanswerable auto``: on when the data has unanswerable questions, said in
the run summary; never the silent mode in which unanswerable questions are trained as spans):
no-answer score per question, an empty answer above ``--null-threshold``, and the best threshold
found on dev reported and saved beside the fixed one.
"""

from __future__ import annotations

import functools
from pathlib import Path

from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.io import write_text
from bertkit.outputs.modelcard import CardSpec, Metric
from bertkit.tasks.base import (TaskHeader, Evaluation, ScoredSplit, TaskData, TaskRun,
                                report_metrics, task_functions)
from bertkit.tasks.common import parse_split
from bertkit.tasks.driver import finetune
from bertkit.tasks.qa.checks import gold_reach, reach_lines
from bertkit.tasks.qa.config import QAConfig
from bertkit.tasks.qa.answer import (answer_questions, prediction_lines, score,  # noqa: F401
                                     window_logits)
from bertkit.tasks.qa.data import (EXTENSIONS, count_unanswerable, load_qa_data, name_questions,
                                   read_qa_file)
from bertkit.tasks.qa.decode import Answers
from bertkit.tasks.qa.encoding import WindowBatches, encode, null_windows
from bertkit.tasks.qa.model import SpanLoss, build_qa_model, load_qa_model, save_qa_model
from bertkit.tasks.qa.suite import SUITE
from bertkit.training.batches import plan_steps
from bertkit.training.devices import Runtime, make_runtime

SCORING = ("official SQuAD scorers (evaluate-v1.1.py / evaluate-v2.0.py): answers normalised "
           "(lowercase, ASCII punctuation and the articles a/an/the removed, whitespace "
           "collapsed); EM and token F1 each the max over gold answers, percent; a question "
           "without a prediction scores 0 and counts in the total")


def _settings(cfg: QAConfig) -> dict:
    return {"max_length": cfg.max_length, "doc_stride": cfg.doc_stride,
            "max_question_length": cfg.max_question_length, "n_best": cfg.n_best,
            "max_answer_length": cfg.max_answer_length}


def decide_v2(cfg: QAConfig, data: TaskData) -> tuple[bool, str | None]:
    """Whether to run in SQuAD 2.0 mode, and the note saying why when chosen automatically.

    Raises:
        BertkitError: ``--unanswerable off`` with unanswerable questions in the data (file,
            article and question id of the first named); ``auto`` with questions without
            answers in a file that declares ``"version": "1.1"`` (the first few named).
    """
    counts = {s: count_unanswerable(xs) for s, xs in
              (("train", data.label_examples), ("dev", data.splits["dev"]),
               ("test", data.splits["test"]))}
    found = sum(counts.values())
    if cfg.unanswerable == "on":
        return True, None
    if cfg.unanswerable == "off":
        if found:
            for split in ("train", "dev", "test"):
                xs = data.label_examples if split == "train" else data.splits[split]
                first = next((x for x in xs if x.labelled and not x.answers), None)
                if first is not None:
                    raise BertkitError(
                        f"article {first.title!r}, question {first.qid!r}: unanswerable question "
                        f"({found} in the data: train {counts['train']}, dev {counts['dev']}, "
                        f"test {counts['test']}) with --unanswerable off", file=first.file,
                        line=first.line, expected="--unanswerable on (or auto) for SQuAD 2.0 "
                                                  "data, or data whose questions all have answers")
        return False, None
    declared = [x for x in (*data.label_examples, *data.splits["dev"], *data.splits["test"])
                if x.labelled and not x.answers and x.declared == "1.1"]
    if declared:  # a SQuAD 1.1 file holds no unanswerable question: an export's skipped one?
        first = declared[0]
        raise BertkitError(
            f"{len(declared)} question(s) without answers in file(s) that declare \"version\": "
            f"\"1.1\" (SQuAD 1.1 has no unanswerable questions; an annotation tool's skipped "
            f"question?): {name_questions(declared)}", file=first.file,
            expected="answers for these questions (or remove them), or --unanswerable on to "
                     "train and score as SQuAD 2.0")
    if found:
        return True, (f"SQuAD 2.0 mode on: the data has unanswerable questions (train "
                      f"{counts['train']}, dev {counts['dev']}, test {counts['test']}); an answer "
                      f"is empty when null score - best span score > {cfg.null_threshold}")
    return False, None


CARD = CardSpec(
    "finetune qa", "question-answering", "Extractive question answering",
    "AutoModelForQuestionAnswering",
    (Metric("f1", "f1", "F1 (official SQuAD scorer, percent)", "F1", scale=1.0),
     Metric("exact", "exact_match", "exact match (official SQuAD scorer, percent)", "EM",
            scale=1.0)),
    'import torch\nfrom transformers import AutoModelForQuestionAnswering, AutoTokenizer\n\n'
    'tokenizer = AutoTokenizer.from_pretrained("{path}")\n'
    'model = AutoModelForQuestionAnswering.from_pretrained("{path}"{remote})\n'
    'question, context = "What does aspirin inhibit?", "Aspirin inhibits platelet aggregation."\n'
    'enc = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")\n'
    'offsets = enc.pop("offset_mapping")[0]\n'
    'with torch.no_grad():\n'
    '    out = model(**enc)\n'
    'in_context = torch.tensor([s == 1 for s in enc.sequence_ids(0)])\n'
    'start = out.start_logits[0].masked_fill(~in_context, -1e9).argmax()\n'
    'end = start + out.end_logits[0, start:].masked_fill(~in_context[start:], -1e9)[:30].argmax()\n'
    'print(context[offsets[start][0]:offsets[end][1]])\n'
    '# transformers 4.x: pipeline("question-answering", model="{path}") (removed in 5.x);\n'
    '# long contexts, n-best decoding and SQuAD 2.0 thresholds: `bertkit predict qa -m {path}`')
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics."""


class QATask(TaskHeader, name="qa", config_class=QAConfig,
             extensions=EXTENSIONS, unit="questions", select_metric="f1",
             card=CARD, suite=SUITE):
    """Extractive question answering as a :class:`~bertkit.tasks.base.Task` (module docstring)."""

    def load(self, cfg: QAConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` of ``cfg.data`` (directory or registered name)."""
        out, sources = load_qa_data(cfg.data, splits)
        return TaskData(out, sources)

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The unlabelled text of the training split of ``data`` for TAPT
        (:mod:`bertkit.workflows.task_text`): of the first ``max_examples`` questions (all:
        None), each context once (SQuAD asks ~5 questions of a paragraph, COVID-QA ~14 of an
        article: repeated, a context would weigh that many times in TAPT), then each question."""
        train = load_qa_data(data, ("train",))[0]["train"][:max_examples]
        contexts = list(dict.fromkeys(x.context for x in train if x.context))
        return contexts + [x.question for x in train if x.question]

    def prepare(self, cfg: QAConfig, model_name: str, data: TaskData, runtime: Runtime,
                console: Console | None = None) -> TaskRun:
        """The QA model, the training windows and the dev/test/save steps.

        Raises:
            BertkitError: unanswerable questions with ``--unanswerable off``; a model that
                cannot be loaded.
        """
        from bertkit.encoders import load_tokenizer

        train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
        v2, note = decide_v2(cfg, data)
        tokenizer = load_tokenizer(model_name)
        settings = _settings(cfg)
        model = SpanLoss(build_qa_model(model_name))
        windows = functools.partial(encode, tokenizer=tokenizer, max_length=cfg.max_length,
                                    doc_stride=cfg.doc_stride,
                                    max_question_length=cfg.max_question_length)
        feats = {"train": windows(train_x), "dev": windows(dev_x)}
        pad = tokenizer.pad_token_id
        batches = WindowBatches(feats["train"], cfg.batch_size, cfg.seed, pad, cfg.length_group,
                                cfg.null_window_rate)
        tr = feats["train"]
        summary = _summary(cfg, data, feats, batches, v2, note, model_name, runtime)
        reach = {s: gold_reach(xs, tokenizer, cfg.max_answer_length)
                 for s, xs in (("train", train_x), ("dev", dev_x), ("test", test_x))}
        summary += "".join(f"\nwarning: {line}" for line in reach_lines(reach))
        state: dict = {}

        def run(m, split: str, xs) -> Answers:
            return answer_questions(m, tokenizer, xs, settings, runtime, cfg.eval_batch_size,
                                    feats[split])[0]

        def evaluate_dev(m) -> dict:
            return score(dev_x, run(m, "dev", dev_x), v2, cfg.null_threshold)

        def choose_threshold(m) -> dict | None:
            """SQuAD 2.0: the dev split's best-F1 no-answer threshold for the final model."""
            if v2:
                dev = score(dev_x, run(m, "dev", dev_x), v2, cfg.null_threshold)
                state["dev_threshold"] = dev["best_f1_thresh"]
                return {"no_answer_threshold": state["dev_threshold"]}
            return None

        def test(m, console: Console | None = None) -> ScoredSplit:
            feats["test"] = windows(test_x)
            answers = run(m, "test", test_x)
            metrics = score(test_x, answers, v2, cfg.null_threshold)
            if v2:  # the threshold chosen on dev (choose_on_dev), applied to test
                if "dev_threshold" not in state:  # test called without choose_on_dev
                    choose_threshold(m)
                t = state["dev_threshold"]
                at = score(test_x, answers, v2, t)
                metrics.update({"dev_best_f1_thresh": t, "exact_at_dev_thresh": at["exact"],
                                "f1_at_dev_thresh": at["f1"]})

            def write(run_dir: Path) -> None:
                write_text(Path(run_dir) / "test_predictions.jsonl",
                           prediction_lines(test_x, answers, v2, cfg.null_threshold, gold=True))

            return ScoredSplit(metrics, write)

        def save(m, directory: Path) -> None:
            save_qa_model(m, tokenizer, directory, {
                **settings, "unanswerable": v2, "null_threshold": cfg.null_threshold,
                "dev_best_f1_thresh": state.get("dev_threshold"), "base_model": model_name,
                "data": cfg.data})

        return TaskRun(model, batches, evaluate_dev, test, save, summary=summary,
                       choose_on_dev=choose_threshold, results={
            "unanswerable": v2, "doc_stride_is": "overlap (Hugging Face run_qa.py)",
            "windows": {"train": len(tr), "dev": len(feats["dev"]),
                        "train_null_answerable": int(null_windows(tr).sum()),
                        "sampled_per_epoch": [sum(len(b) for b in batches.plan(e))
                                              for e in range(plan_steps(batches, cfg)[0])]},
            "questions_cut": {"train": tr.questions_cut,
                              "dev": feats["dev"].questions_cut},
            "gold_out_of_reach": reach, "scoring": SCORING})

    def report(self, results: dict, title: str):
        """EM and F1 (all, HasAns, NoAns; v2 also the best thresholds) as a rich table."""
        return qa_table(report_metrics(results), title)

    evaluate, predict, stream = task_functions("qa")


def stream_qa(model_dir: str, input_path: str, device: str = "auto", precision: str = "auto",
              batch_size: int = 64, null_threshold: float | None = None,
              console: Console | None = None):
    """``predict qa`` for :mod:`bertkit.predict` (:mod:`bertkit.tasks.qa.stream`; None
    for SQuAD JSON, read whole)."""
    from bertkit.tasks.qa.stream import qa_predictor

    return qa_predictor(model_dir, input_path, device, precision, batch_size,
                        null_threshold, console, _saved_settings, _threshold)


def _summary(cfg: QAConfig, data: TaskData, feats: dict, batches: WindowBatches, v2: bool,
             note: str | None, model_name: str, runtime: Runtime) -> str:
    """The lines printed before training: sizes and windows, SQuAD mode, model, device; the
    null windows sampled (``--null-window-rate``) and answers no window holds."""
    train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
    tr = feats["train"]
    outside = int(sum(1 for x in train_x if x.answers)
                  - len(set(tr.example[tr.start_positions > 0].tolist())))
    summary = (f"data: {len(train_x)}/{len(dev_x)}/{len(test_x)} questions (train/dev/test), "
               f"{len(tr)}/{len(feats['dev'])} windows of {cfg.max_length} pieces, overlap "
               f"{cfg.doc_stride} (train/dev); {tr.questions_cut} train questions cut at "
               f"{cfg.max_question_length} pieces; SQuAD {'2.0' if v2 else '1.1'} mode; model "
               f"{model_name}; device {runtime.device}, {runtime.precision}")
    if note:
        summary = f"note: {note}\n{summary}"
    if cfg.null_window_rate < 1.0:
        null = int(null_windows(tr).sum())
        summary += (f"\nnull windows of answerable questions: {null} of {len(tr)}, each kept "
                    f"with probability {cfg.null_window_rate:g} per epoch (drawn afresh; "
                    f"epoch 1 trains {sum(len(b) for b in batches.plan(0))} windows)")
    if outside:
        summary += (f"\nnote: {outside} answerable training question(s) have no window "
                    f"holding the whole answer (labelled [CLS])")
    return summary


def qa_table(metrics: dict, title: str):
    """The official scores of one split as a rich table (percent)."""
    from rich.table import Table

    v2 = "threshold" in metrics
    caption = "official SQuAD v2.0 scorer" if v2 else "official SQuAD v1.1 scorer"
    if v2:
        caption += f"; empty answer when null - span score > {metrics['threshold']}"
    table = Table(title=title, caption=caption)
    for col in ("questions", "EM", "F1", "n"):
        table.add_column(col, justify="left" if col == "questions" else "right")
    table.add_row("[bold]all", f"{metrics['exact']:.2f}", f"[bold]{metrics['f1']:.2f}",
                  str(metrics["total"]))
    for part in ("HasAns", "NoAns"):
        if f"{part}_total" in metrics:
            table.add_row(part, f"{metrics[f'{part}_exact']:.2f}", f"{metrics[f'{part}_f1']:.2f}",
                          str(metrics[f"{part}_total"]))
    if "best_f1" in metrics:
        table.add_section()
        table.add_row(f"best threshold (EM {metrics['best_exact_thresh']:.3g}, "
                      f"F1 {metrics['best_f1_thresh']:.3g})", f"{metrics['best_exact']:.2f}",
                      f"{metrics['best_f1']:.2f}", "")
    if "f1_at_dev_thresh" in metrics:
        table.add_row(f"dev's best F1 threshold ({metrics['dev_best_f1_thresh']:.3g})",
                      f"{metrics['exact_at_dev_thresh']:.2f}",
                      f"{metrics['f1_at_dev_thresh']:.2f}", "")
    if metrics.get("missing"):
        table.add_row("missing predictions", "", "", str(metrics["missing"]))
    return table


TASK = QATask()


def finetune_qa(cfg: QAConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch (F1), score test, and write the run directory (through
    the shared driver, :func:`bertkit.tasks.driver.finetune`).

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, ``test_predictions.jsonl`` and
    ``model/`` (a plain ``AutoModelForQuestionAnswering`` + tokenizer + ``bertkit.json``).

    Raises:
        BertkitError: bad data (before any training), model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def _saved_settings(model, meta: dict) -> dict:
    from bertkit.inputs.lengths import fit_length, position_limit

    return {"max_length": fit_length(int(meta.get("max_length", 384)),
                                     position_limit(model.config)),
            "doc_stride": int(meta.get("doc_stride", 128)),
            "max_question_length": int(meta.get("max_question_length", 64)),
            "n_best": int(meta.get("n_best", 20)),
            "max_answer_length": int(meta.get("max_answer_length", 30))}


def _threshold(meta: dict, null_threshold: float | None) -> float:
    return float(meta.get("null_threshold", 0.0)) if null_threshold is None else null_threshold


def evaluate_qa(model_dir: str, data: str, split: str = "test", device: str = "auto",
                precision: str = "auto", batch_size: int = 64,
                null_threshold: float | None = None, max_eval_samples: int | None = None,
                console: Console | None = None) -> Evaluation:
    """Score a saved QA model on one split of ``data`` with the official scorer.

    Args:
        null_threshold: SQuAD 2.0 threshold (None: the one saved with the model).

    Returns:
        an :class:`~bertkit.tasks.base.Evaluation`: the metrics, the prediction file's text on
        demand, the examples and the predictions.

    Raises:
        BertkitError: no saved model there, bad data or an unknown split.
    """
    split = parse_split(split)
    model, tokenizer, meta = load_qa_model(model_dir)
    runtime = make_runtime(device, precision, console)
    out, _ = load_qa_data(data, (split,))
    xs = out[split][:max_eval_samples]
    v2 = bool(meta.get("unanswerable")) or count_unanswerable(xs) > 0
    if v2 and not meta.get("unanswerable") and console:
        console.print(f"[yellow]warning:[/] {split} has unanswerable questions but the model was "
                      f"trained without them (SQuAD 1.1 mode): scoring as SQuAD 2.0",
                      highlight=False)
    t = _threshold(meta, null_threshold)
    settings = _saved_settings(model, meta)
    reach = gold_reach(xs, tokenizer, settings["max_answer_length"])
    if console:
        from bertkit.tasks.common import warn_notes

        warn_notes(reach_lines({split: reach}), console)
    answers, _ = answer_questions(model, tokenizer, xs, settings, runtime, batch_size)
    metrics = {**score(xs, answers, v2, t), "too_long_answers": reach["too_long"],
               "mid_piece_answers": reach["mid_piece"],
               "max_answer_length": settings["max_answer_length"]}
    return Evaluation(metrics,
                      lambda: prediction_lines(xs, answers, v2, t, gold=True), xs, answers)


def predict_qa(model_dir: str, input_path: str, output: str | None = None, device: str = "auto",
               precision: str = "auto", batch_size: int = 64,
               null_threshold: float | None = None, skip_bad_lines: bool = False,
               console: Console | None = None) -> str:
    """Answer the questions of a file: JSON lines with ``id``, ``question``, ``context`` (the
    ``datasets`` form; answers optional) or SQuAD JSON, read whole (``bertkit predict qa``
    streams JSON lines instead, :mod:`bertkit.tasks.qa.stream`).

    Args:
        output: file to write atomically; None returns the text only.
        skip_bad_lines: accepted for the command line's sake; a file read whole is checked
            whole (a bad question is an error).
        null_threshold: SQuAD 2.0 threshold (None: the one saved with the model).

    Returns:
        JSON lines (:func:`prediction_lines`): ``id``, ``answer``, ``start``, ``end``, ``score``
        (and ``null_score_diff`` for a SQuAD 2.0 model).

    Raises:
        BertkitError: unreadable or bad input (file, article, question id named), no saved model.
    """
    model, tokenizer, meta = load_qa_model(model_dir)
    runtime = make_runtime(device, precision, console)
    xs = read_qa_file(input_path, labelled=False, console=console)
    v2 = bool(meta.get("unanswerable"))
    answers, feats = answer_questions(model, tokenizer, xs, _saved_settings(model, meta),
                                      runtime, batch_size)
    if console and feats.questions_cut:
        console.print(f"note: {feats.questions_cut} question(s) cut at "
                      f"{meta.get('max_question_length')} pieces", highlight=False)
    text = prediction_lines(xs, answers, v2, _threshold(meta, null_threshold))
    if output:
        write_text(output, text)
    return text
