"""``bertkit finetune <task>``: thin wrappers over each registered task's ``finetune_<task>``
(:mod:`bertkit.tasks.registry`), which runs the shared driver (:mod:`bertkit.tasks.driver`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console

from bertkit.cli import _options as opt
from bertkit.cli._app import finetune_app, make_console, user_errors
from bertkit.recipes import describe_sources, settings_with_sources


Seeds = Annotated[Optional[str], typer.Option("--seeds", help="Run once per seed (e.g. 1,2,3), each in OUTPUT/seed-N/, and write OUTPUT/summary.json with mean, standard deviation and 95% interval per metric (one after another under torchrun).")]
SplitFromDev = Annotated[Optional[float], typer.Option("--split-from-dev", help="Train on the dev file less this held-out fraction (every 1/F-th example, used as dev for model selection), for sets with only dev and test files; recorded in results.json. \\[default: off; 0.1 for a registered set without train]")]


def _run(config_cls, command: str, run, flags: dict, recipe):
    """Build the config (:func:`bertkit.recipes.settings_with_sources`: dataclass < the data
    set's dev-chosen settings for the packaged encoder < saved run with --resume < recipe <
    flags), print where the settings came from (the first line), run the task; results None on a
    non-main process of a multi-process run (it prints nothing)."""
    from bertkit.training.devices import is_main_process

    cfg, sources = settings_with_sources(config_cls, command, flags, recipe)
    console = make_console()
    if is_main_process():
        console.print(describe_sources(cfg, sources), highlight=False, markup=False)
    results = run(cfg, console)
    done = "test" in results or "metrics" in results  # one run, or the summary of --seeds
    return cfg, console, (results if done else None)


def _finish(task_name: str, cfg, console: Console, results: dict | None) -> None:
    """Print a finished run: the task's test table (or the --seeds summary), the split rule if
    one was applied, and the run directory with the training throughput."""
    from bertkit.cli._report import seed_table
    from bertkit.tasks.registry import get_task

    if results is None:
        return
    task = get_task(task_name)
    if "metrics" in results:  # --seeds
        console.print(seed_table(results, f"{task_name}: {cfg.data}, seeds {results['seeds']}"))
        console.print(f"summary: {cfg.output_dir}/summary.json; runs in "
                      f"{cfg.output_dir}/seed-N/", highlight=False)
        return
    console.print(task.report(results, f"test: {cfg.data}"))
    split = results.get("split_from_dev")
    if split:
        console.print(f"note: trained on {split['train']} examples of {split['source']}, "
                      f"{split['dev']} held out as dev (--split-from-dev {split['fraction']})",
                      highlight=False)
    rate = results.get(f"train_{task.unit}_per_second", 0.0)
    console.print(f"run directory: {cfg.output_dir} (best epoch {results['best_epoch']}; "
                  f"{rate:.1f} training {task.unit}/s)", highlight=False)


@finetune_app.command("ner")
@user_errors
@opt.training_options()
def ner_cli(
    data: Annotated[Optional[str], typer.Option("--data", "-d", help=opt.data_help("ner", "under $BERTKIT_DATA") + " or a directory with train/dev/test files. \\[default: bc5cdr]")] = None,
    model: opt.Model = None,
    crf: Annotated[Optional[bool], typer.Option("--crf/--no-crf", help="Linear-chain CRF over word scores. \\[default: no-crf]")] = None,
    label_all_subwords: Annotated[Optional[bool], typer.Option("--label-all-subwords", help="Train continuation pieces too (B- pieces after the first as I-).")] = None,
    max_length: opt.MaxLength = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Windows per batch when evaluating. \\[default: 32]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Use only the first N training sentences.", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Use only the first N dev and test sentences.", min=1)] = None,
    pack: Annotated[Optional[bool], typer.Option("--pack/--no-pack", help="Train on packed rows: several sentences a row with block-diagonal attention, so random batches carry no padding. \\[default: pack]")] = None,
    pack_length: Annotated[Optional[int], typer.Option("--pack-length", help="Minimum tokens per packed row. \\[default: 64]", min=8)] = None,
    length_group: Annotated[Optional[int], typer.Option("--length-group", help="Batches sorted by length together (1: random batches). \\[default: 1 with --pack, 50 without]", min=1)] = None,
    metric: Annotated[Optional[opt.NERMetric], typer.Option("--metric", help="Dev metric that picks the best epoch: span (entity F1, seqeval strict IOB2) or token-macro (token-level macro-F1 over the entity types: SciBERT's PICO figure for EBM-NLP). Both are reported. \\[default: span]")] = None,
    split_from_dev: SplitFromDev = None,
    seeds: Seeds = None,
    recipe: opt.Recipe = None,
    train_flags: dict | None = None,
) -> None:
    """Fine-tune an encoder for named-entity recognition (IOB2), keep the best dev epoch, score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.conll and
    model/ (loadable with AutoModelForTokenClassification and pipeline("token-classification")).
    The packaged MiniLM on bc5cdr trains with the settings chosen on its dev split (recipe
    bc5cdr-ner-minilm: lr 2e-4, CRF) unless a flag or --recipe says otherwise; other encoders and
    sets start from BERT-base's defaults (lr 5e-5, no CRF). The first line printed says where
    each setting came from.
    """
    from bertkit.tasks.ner import NERConfig, finetune_ner

    flags = opt.train_options(
        train_flags, data=data, model=model, crf=crf, label_all_subwords=label_all_subwords,
        max_length=max_length, eval_batch_size=eval_batch_size, max_train_samples=max_train_samples,
        max_eval_samples=max_eval_samples, pack=pack, pack_length=pack_length,
        length_group=length_group, metric=metric, split_from_dev=split_from_dev, seeds=seeds)
    cfg, console, results = _run(NERConfig, "finetune ner", finetune_ner, flags, recipe)
    _finish("ner", cfg, console, results)


@finetune_app.command("re")
@user_errors
@opt.training_options()
def re_cli(
    data: Annotated[Optional[str], typer.Option("--data", "-d", help=opt.data_help("re", "under $BERTKIT_DATA/re/") + " or a directory with train/dev/test.jsonl. \\[default: chemprot]")] = None,
    model: opt.Model = None,
    pooling: Annotated[Optional[opt.Pooling], typer.Option("--pooling", help="cls (SciBERT; scored higher on ChemProt dev in a short run) or entity-start (states at the two opening markers, Baldini Soares et al. 2019). \\[default: cls]")] = None,
    typed_markers: Annotated[Optional[bool], typer.Option("--typed-markers/--untyped-markers", help="One marker pair per entity type, when the data gives types. \\[default: untyped]")] = None,
    negative_label: Annotated[Optional[str], typer.Option("--negative-label", help="Label left out of micro/macro-F1: auto (no_relation, false, ... when present), a label, or - for none. \\[default: auto]")] = None,
    class_weights: Annotated[Optional[opt.ClassWeights], typer.Option("--class-weights", help="none, or balanced (loss weight N/(C*count) per label, as finetune cls; for a classifier that collapses to the majority label). \\[default: none]")] = None,
    skip_bad_lines: Annotated[Optional[bool], typer.Option("--skip-bad-lines", help="Skip and count unreadable lines instead of stopping before training.")] = None,
    max_length: Annotated[Optional[int], typer.Option("--max-length", help="Pieces per input incl. markers and [CLS]/[SEP]; longer inputs are cut around the two entities, both always kept. \\[default: 512]", min=8)] = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Pairs per batch when evaluating. \\[default: 64]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Use only the first N training pairs.", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Use only the first N dev and test pairs.", min=1)] = None,
    split_from_dev: SplitFromDev = None,
    seeds: Seeds = None,
    recipe: opt.Recipe = None,
    train_flags: dict | None = None,
) -> None:
    """Fine-tune an encoder for relation classification between two marked entities.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl,
    test_confusion.{csv,png} and model/ (AutoTokenizer and AutoModelForSequenceClassification;
    pipeline("text-classification") with --pooling cls, trust_remote_code=True with entity-start).
    The packaged MiniLM on chemprot trains with the settings chosen for it (recipe
    chemprot-re-minilm: lr 2e-4) unless a flag or --recipe says otherwise; other encoders and sets
    start from BERT-base's defaults (lr 5e-5). The first line printed says where each setting
    came from.
    """
    from bertkit.tasks.re import REConfig, finetune_re

    flags = opt.train_options(
        train_flags, data=data, model=model, pooling=pooling, typed_markers=typed_markers,
        negative_label=negative_label, class_weights=class_weights,
        skip_bad_lines=skip_bad_lines, max_length=max_length,
        eval_batch_size=eval_batch_size, max_train_samples=max_train_samples,
        max_eval_samples=max_eval_samples, split_from_dev=split_from_dev, seeds=seeds)
    cfg, console, results = _run(REConfig, "finetune re", finetune_re, flags, recipe)
    _finish("re", cfg, console, results)


@finetune_app.command("dep")
@user_errors
@opt.training_options(epochs=6, lr=2e-4, batch_size=16)
def dep_cli(
    data: Annotated[Optional[str], typer.Option("--data", "-d", help=opt.data_help("dep", "under $BERTKIT_DATA as dep/genia/dev.conllu and test.conllu: trains on dev less every 10th sentence, held out for model selection, reports on test") + " or a directory with train/dev/test .conllu files. \\[default: genia]")] = None,
    model: opt.Model = None,
    word_repr: Annotated[Optional[opt.WordRepr], typer.Option("--word-repr", help="Word vector: first (first subword) or mean (mean of subwords). \\[default: first]")] = None,
    scalar_mix: Annotated[Optional[bool], typer.Option("--scalar-mix/--no-scalar-mix", help="Learned scalar mix of all encoder layers. \\[default: no-scalar-mix]")] = None,
    decoder: Annotated[Optional[opt.Decoder], typer.Option("--decoder", help="mst (Chu-Liu/Edmonds, one root) or eisner (projective). \\[default: mst]")] = None,
    arc_mlp: Annotated[Optional[int], typer.Option("--arc-mlp", help="Arc MLP size. \\[default: 500]", min=1)] = None,
    rel_mlp: Annotated[Optional[int], typer.Option("--rel-mlp", help="Label MLP size. \\[default: 100]", min=1)] = None,
    mlp_dropout: Annotated[Optional[float], typer.Option("--mlp-dropout", help="Dropout after the MLPs. \\[default: 0.33]", min=0)] = None,
    head_lr: Annotated[Optional[float], typer.Option("--head-lr", help="Peak learning rate of the parser head (fresh weights; SuPar: 20x the encoder's). \\[default: 1e-3]")] = None,
    max_length: opt.MaxLength = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Sentences per batch when evaluating. \\[default: 64]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Use only the first N training sentences.", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Use only the first N dev and test sentences.", min=1)] = None,
    skip_bad_sentences: Annotated[Optional[bool], typer.Option("--skip-bad-sentences", help="Leave out gold sentences that are malformed or not trees (one root, all words reachable), counted in results.json, instead of stopping.")] = None,
    split_from_dev: SplitFromDev = None,
    seeds: Seeds = None,
    recipe: opt.Recipe = None,
    train_flags: dict | None = None,
) -> None:
    """Fine-tune a biaffine dependency parser (Dozat & Manning 2017), keep the best dev epoch
    (LAS without punctuation), score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.conllu and
    model/ (encoder + tokenizer loadable with AutoModel/AutoTokenizer, parser.safetensors,
    bertkit.json with the relation labels).
    """
    from bertkit.tasks.dep import DepConfig, finetune_dep

    flags = opt.train_options(
        train_flags, data=data, model=model, word_repr=word_repr, scalar_mix=scalar_mix,
        decoder=decoder, arc_mlp=arc_mlp, rel_mlp=rel_mlp, mlp_dropout=mlp_dropout,
        head_lr=head_lr, max_length=max_length, eval_batch_size=eval_batch_size, max_train_samples=max_train_samples,
        max_eval_samples=max_eval_samples, skip_bad_sentences=skip_bad_sentences,
        split_from_dev=split_from_dev, seeds=seeds)
    cfg, console, results = _run(DepConfig, "finetune dep", finetune_dep, flags, recipe)
    _finish("dep", cfg, console, results)


@finetune_app.command("cls")
@user_errors
@opt.training_options()
def cls_cli(
    data: Annotated[Optional[str], typer.Option("--data", "-d", help=opt.data_help("cls", "under $BERTKIT_DATA/cls/") + " or a directory with train/dev/test .jsonl (text, label), .csv or .tsv (header row). \\[default: scicite]")] = None,
    model: opt.Model = None,
    text_column: Annotated[Optional[str], typer.Option("--text-column", help="Field (JSON) or column (CSV/TSV) holding the text. \\[default: text]")] = None,
    text_pair_column: Annotated[Optional[str], typer.Option("--text-pair-column", help="Field of the second text of a sentence pair, used when present. \\[default: text_pair]")] = None,
    label_column: Annotated[Optional[str], typer.Option("--label-column", help="Field or column holding the label (a list with --multi-label). \\[default: label]")] = None,
    multi_label: Annotated[Optional[bool], typer.Option("--multi-label/--single-label", help="Labels are lists: sigmoid outputs, one threshold per label chosen on dev. \\[default: single-label]")] = None,
    label_sep: Annotated[Optional[str], typer.Option("--label-sep", help="With --multi-label: a string label is a list joined by this separator (e.g. ';' for \"a;b\"). \\[default: none; labels that look delimited are warned about]")] = None,
    quoting: Annotated[Optional[opt.Quoting], typer.Option("--quoting", help="CSV/TSV quotes: csv (quoted fields may hold delimiters and line breaks) or none (a \" is a plain character, for unquoted TSV exports). \\[default: csv]")] = None,
    long_text: Annotated[Optional[opt.LongText], typer.Option("--long-text", help="Texts over --max-length: head-tail (keep the first quarter and last three quarters of the budget; counted and reported) or windows (overlapping windows, logits averaged). \\[default: head-tail]")] = None,
    class_weights: Annotated[Optional[opt.ClassWeights], typer.Option("--class-weights", help="none, or balanced (loss weight N/(C*count) per label, for imbalanced sets such as ACL-ARC). \\[default: none]")] = None,
    skip_bad_lines: Annotated[Optional[bool], typer.Option("--skip-bad-lines", help="Skip and count unreadable lines instead of stopping before training.")] = None,
    max_length: Annotated[Optional[int], typer.Option("--max-length", help="Pieces per input incl. [CLS]/[SEP]; longer texts follow --long-text, never cut silently. \\[default: 512]", min=8)] = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Texts per batch when evaluating. \\[default: 64]", min=1)] = None,
    length_group: Annotated[Optional[int], typer.Option("--length-group", help="Training batches sorted by length together (1: random batches). \\[default: 50]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Use only the first N training texts.", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Use only the first N dev and test texts.", min=1)] = None,
    split_from_dev: SplitFromDev = None,
    seeds: Seeds = None,
    recipe: opt.Recipe = None,
    train_flags: dict | None = None,
) -> None:
    """Fine-tune an encoder for sentence (or sentence-pair) classification, keep the best dev
    epoch (macro-F1), score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl,
    test_confusion.{csv,png} and model/ (a plain AutoModelForSequenceClassification; works with
    pipeline("text-classification")). The packaged MiniLM on scicite, acl-arc or paper-field
    trains with that set's recipe settings (scicite-cls-minilm, ...) unless a flag or --recipe
    says otherwise; the first line printed says where each setting came from.
    """
    from bertkit.tasks.cls import CLSConfig, finetune_cls

    flags = opt.train_options(
        train_flags, data=data, model=model, text_column=text_column,
        text_pair_column=text_pair_column, label_column=label_column, multi_label=multi_label,
        label_sep=label_sep, quoting=quoting, long_text=long_text, class_weights=class_weights,
        skip_bad_lines=skip_bad_lines,
        max_length=max_length, eval_batch_size=eval_batch_size, length_group=length_group,
        max_train_samples=max_train_samples, max_eval_samples=max_eval_samples,
        split_from_dev=split_from_dev, seeds=seeds)
    cfg, console, results = _run(CLSConfig, "finetune cls", finetune_cls, flags, recipe)
    _finish("cls", cfg, console, results)


@finetune_app.command("qa")
@user_errors
@opt.training_options()
def qa_cli(
    data: Annotated[Optional[str], typer.Option("--data", "-d", help=opt.data_help("qa", "under $BERTKIT_DATA/qa/") + " or a directory with train/dev/test .json (SQuAD JSON: data -> paragraphs -> qas) or .jsonl (the datasets export: id, title, context, question, answers{text, answer_start}). \\[default: squad]")] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Encoder directory or hub id, or an earlier `finetune qa` run (its directory or model/) to fine-tune further, e.g. SQuAD first, then a domain set. \\[default: the packaged MiniLM-L6-H384 encoder]")] = None,
    max_length: Annotated[Optional[int], typer.Option("--max-length", help="Pieces per window: [CLS] question [SEP] context slice [SEP]; a longer context is read whole in several windows. \\[default: 384]", min=8)] = None,
    doc_stride: Annotated[Optional[int], typer.Option("--doc-stride", help="OVERLAP in pieces between consecutive windows of one context (Hugging Face run_qa.py's meaning), not the step between window starts (Google's run_squad.py and SpanBERT). \\[default: 128]", min=0)] = None,
    max_question_length: Annotated[Optional[int], typer.Option("--max-question-length", help="Pieces a question keeps; longer questions are cut (counted), never an error. \\[default: 64]", min=1)] = None,
    max_answer_length: Annotated[Optional[int], typer.Option("--max-answer-length", help="Most pieces in a predicted answer. \\[default: 30]", min=1)] = None,
    n_best: Annotated[Optional[int], typer.Option("--n-best", help="Start and end candidates per window when decoding. \\[default: 20]", min=1)] = None,
    unanswerable: Annotated[Optional[opt.Unanswerable], typer.Option("--unanswerable", help="SQuAD 2.0 mode (no-answer score, empty answers): auto (on when the data has unanswerable questions, and said so), on, or off (refuses data with unanswerable questions). \\[default: auto]")] = None,
    null_threshold: Annotated[Optional[float], typer.Option("--null-threshold", help="SQuAD 2.0: answer empty when null score - best span score is above this; the best threshold on dev is reported beside it. \\[default: 0.0]")] = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Windows per batch when evaluating. \\[default: 64]", min=1)] = None,
    length_group: Annotated[Optional[int], typer.Option("--length-group", help="Training batches sorted by length together (1: random batches). \\[default: 50]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Use only the first N training questions.", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Use only the first N dev and test questions.", min=1)] = None,
    split_from_dev: SplitFromDev = None,
    seeds: Seeds = None,
    recipe: opt.Recipe = None,
    train_flags: dict | None = None,
) -> None:
    """Fine-tune an encoder for extractive question answering (SQuAD 1.1/2.0 style), keep the
    best dev epoch (F1, official SQuAD scorer), score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl and
    model/ (a plain AutoModelForQuestionAnswering, loadable without bertkit or remote code; its
    README.md shows how; pipeline("question-answering") exists in transformers 4.x only).
    """
    from bertkit.tasks.qa import QAConfig, finetune_qa

    flags = opt.train_options(
        train_flags, data=data, model=model, max_length=max_length, doc_stride=doc_stride,
        max_question_length=max_question_length, max_answer_length=max_answer_length,
        n_best=n_best, unanswerable=unanswerable, null_threshold=null_threshold,
        eval_batch_size=eval_batch_size, length_group=length_group,
        max_train_samples=max_train_samples, max_eval_samples=max_eval_samples,
        split_from_dev=split_from_dev, seeds=seeds)
    cfg, console, results = _run(QAConfig, "finetune qa", finetune_qa, flags, recipe)
    _finish("qa", cfg, console, results)
