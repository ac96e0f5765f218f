"""``finetune dep``, ``evaluate dep`` and ``predict dep`` as importable functions.

The CLI in ``bertkit/cli`` is a thin wrapper over :func:`finetune_dep`, :func:`evaluate_dep` and
:func:`predict_dep`.
"""

from __future__ import annotations

from pathlib import Path
import numpy as np
from rich.console import Console

from bertkit.data.conllu import DepSentence, format_conllu, read_conllu, text_sentences
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.io import write_text
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.metrics.dep import RULE_TEXT, punct_rule
from bertkit.outputs.modelcard import CardSpec, Metric, pipeline_usage
from bertkit.outputs.tables import parse_table
from bertkit.tasks.base import (TaskHeader, Evaluation, Prepared, ScoredSplit, TaskData,
                                table_report, task_functions)
from bertkit.tasks.common import parse_split, warn_unseen
from bertkit.tasks.dep.data import EXTENSIONS, load_dep_data, relations, unseen_relations
from bertkit.tasks.dep.encoding import SentenceBatches, encode
from bertkit.tasks.dep.config import DepConfig
from bertkit.tasks.dep.model import DECODERS, BiaffineParser, build_parser, load_parser
from bertkit.tasks.dep.parse import parse_sentences, score
from bertkit.tasks.dep.suite import SUITE
from bertkit.tasks.driver import finetune
from bertkit.training.devices import make_runtime


CARD = CardSpec(
    "finetune dep", "feature-extraction", "Dependency parsing (encoder)", "AutoModel",
    (Metric("las", "las", "LAS (punctuation excluded)", "LAS"),
     Metric("uas", "uas", "UAS (punctuation excluded)", "UAS")),
    'from transformers import AutoModel, AutoTokenizer\n\n'
    'tokenizer = AutoTokenizer.from_pretrained("{path}")\n'
    'encoder = AutoModel.from_pretrained("{path}")  # the biaffine head is parser.safetensors:\n'
    '# parse with `bertkit predict dep -m {path}`')
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics."""


class DepTask(TaskHeader, name="dep", config_class=DepConfig,
              extensions=EXTENSIONS, unit="sentences", select_metric="las",
              card=CARD, suite=SUITE):
    """Biaffine dependency parsing (Dozat & Manning 2017) as a :class:`~bertkit.tasks.base.Task`;
    best epoch by dev LAS without punctuation. A set without a train file trains on dev less
    every 10th sentence (``default_split_from_dev``), as GENIA is released."""

    default_split_from_dev = 0.1

    def load(self, cfg: DepConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` whole (the driver derives train/dev for a set without train)."""
        data = load_dep_data(cfg.data, splits, skip_bad_sentences=cfg.skip_bad_sentences,
                             held_out=False)
        if console and data.skipped_warning():
            console.print(f"[yellow]warning:[/] {data.skipped_warning()}", highlight=False)
        return TaskData(data.splits, data.sources,
                        info={"skipped_sentences": data.skipped_summary()})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The unlabelled text of the training split of ``data`` for TAPT
        (:mod:`bertkit.workflows.task_text`): one sentence a line (a set without train: dev less its held-out tenth), of the first ``max_examples`` sentences (all: None)."""
        sents = load_dep_data(data, ("train",)).splits["train"][:max_examples]
        return [" ".join(s.words) for s in sents]

    def prepare(self, cfg: DepConfig, model_name: str, data: TaskData, runtime,
                console: Console | None = None) -> Prepared:
        """Relations from train, the parser, encoded sentences and dev/test/save."""
        train_s, dev_s, test_s = (data.splits[k] for k in ("train", "dev", "test"))
        rels = relations(data.label_examples)  # never narrowed by --max-train-samples
        for split, sents in (("dev", dev_s), ("test", test_s)):
            warn_unseen(unseen_relations(rels, sents), split, "relation", console)
        rule = punct_rule([s.upos for s in test_s])
        tokenizer = load_tokenizer(model_name)
        parser = build_parser(model_name, rels, cfg.arc_mlp, cfg.rel_mlp, cfg.mlp_dropout,
                              cfg.scalar_mix)
        parser.head_lr = cfg.head_lr
        rel2id = {r: i for i, r in enumerate(rels)}
        items, report = encode(train_s, tokenizer, rel2id, cfg.max_length)
        report.warn(train_s, console, "a head")
        summary = (f"data: {len(train_s)}/{len(dev_s)}/{len(test_s)} sentences "
                   f"(train/dev/test); {len(rels)} relations; model {model_name}; "
                   f"device {runtime.device}, {runtime.precision}; scoring: "
                   f"{'UPOS PUNCT/SYM' if rule == 'upos' else 'punctuation by word form'} "
                   f"excluded")
        mean = cfg.word_repr == "mean"
        batches = SentenceBatches(items, cfg.batch_size, cfg.seed, tokenizer.pad_token_id, mean)
        dev_items, _ = encode(dev_s, tokenizer, rel2id, cfg.max_length)

        def evaluate_dev(model: BiaffineParser) -> dict:
            h, r = parse_sentences(model, tokenizer, dev_s, runtime, cfg.max_length,
                                   cfg.eval_batch_size, cfg.decoder, cfg.word_repr,
                                   encoded=dev_items)
            return score(dev_s, h, r, rule)

        def test(model: BiaffineParser, console: Console | None = None) -> ScoredSplit:
            heads, test_rels = parse_sentences(model, tokenizer, test_s, runtime, cfg.max_length,
                                               cfg.eval_batch_size, cfg.decoder, cfg.word_repr,
                                               console)
            return ScoredSplit(score(test_s, heads, test_rels, rule), lambda run_dir: write_text(
                run_dir / "test_predictions.conllu", format_conllu(test_s, heads, test_rels)))

        def save(model: BiaffineParser, directory: Path) -> None:
            model.save(directory, tokenizer, {"max_length": cfg.max_length,
                                              "base_model": model_name, "data": cfg.data,
                                              "word_repr": cfg.word_repr, "decoder": cfg.decoder})

        return Prepared(parser, batches, evaluate_dev, test, save, summary=summary, results={
            "splits": data.sources, "split_note": data.note, "decoder": cfg.decoder,
            "scoring": "uas/las exclude punctuation (" + RULE_TEXT[rule] + "); *_punct include "
                       "it; ucm/lcm complete match without punctuation"})

    report = table_report(parse_table)
    evaluate, predict, stream = task_functions("dep")


def stream_dep(model_dir: str, input_path: str, input_format: str = "auto", device: str = "auto",
               precision: str = "auto", batch_size: int = 64, decoder: str | None = None,
               console: Console | None = None):
    """``predict dep`` for :mod:`bertkit.predict` (:mod:`bertkit.tasks.dep.stream`)."""
    from bertkit.tasks.dep.stream import dep_predictor

    return dep_predictor(model_dir, input_path, input_format, device, precision, batch_size,
                         decoder, console)


TASK = DepTask()


def finetune_dep(cfg: DepConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch (LAS, punctuation excluded), score test, write the run
    (through the shared driver, :func:`bertkit.tasks.driver.finetune`).

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, ``test_predictions.conllu`` and
    ``model/`` (Hugging Face encoder + tokenizer, ``parser.safetensors``, ``bertkit.json``).

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data, model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def evaluate_dep(model_dir: str, data: str, split: str = "test", device: str = "auto",
                 precision: str = "auto", batch_size: int = 64, decoder: str | None = None,
                 max_eval_samples: int | None = None,
                 console: Console | None = None, skip_bad_sentences: bool = False
                 ) -> Evaluation:
    """Score a saved parser on one split of ``data`` (for a set without a train file, ``dev`` is
    the held-out tenth of ``dev.conllu``).

    With ``skip_bad_sentences`` malformed gold sentences (not trees) are left out and counted in
    the metrics' ``skipped_sentences``.

    Returns:
        an :class:`~bertkit.tasks.base.Evaluation`: the metrics, the prediction file's text on
        demand, the examples and the predictions.

    Raises:
        BertkitError: no saved model there, bad data, unknown split or decoder.
    """
    split = parse_split(split)
    if decoder is not None and decoder not in DECODERS:
        raise BertkitError(f"unknown decoder '{decoder}'", expected="mst or eisner")
    parser, meta = load_parser(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision, console)
    loaded = load_dep_data(data, (split,), skip_bad_sentences)
    if console and loaded.note:
        console.print(f"note: {loaded.note}", highlight=False)
    if console and loaded.skipped_warning():
        console.print(f"[yellow]warning:[/] {loaded.skipped_warning()}", highlight=False)
    sents = loaded.splits[split][:max_eval_samples]
    warn_unseen(unseen_relations(parser.rels, sents), split, "relation", console,
                against="model")
    max_length = fit_length(meta.get("max_length", 512), position_limit(parser.encoder.config),
                            console)
    heads, rels = parse_sentences(parser, tokenizer, sents, runtime, max_length,
                                  batch_size, decoder or meta.get("decoder", "mst"),
                                  meta.get("word_repr", "first"), console)
    metrics = score(sents, heads, rels)
    if skip_bad_sentences:
        metrics["skipped_sentences"] = loaded.skipped_summary()
    return Evaluation(metrics, lambda: format_conllu(sents, heads, rels), sents, (heads, rels))


def predict_dep(model_dir: str, input_path: str, output: str | None = None,
                input_format: str = "auto", device: str = "auto", precision: str = "auto",
                batch_size: int = 64, decoder: str | None = None,
                console: Console | None = None) -> str:
    """Parse a CoNLL-U file (HEAD/DEPREL may be ``_``) or plain text (one sentence a line).

    Output is CoNLL-U: for CoNLL-U input every line as it came except HEAD and DEPREL of the
    word lines; for text, one ``# text =`` comment and one word line per word.

    Raises:
        BertkitError: bad input file, unknown format or decoder, or no saved model.
    """
    if input_format not in ("auto", "conllu", "text"):
        raise BertkitError(f"unknown input format '{input_format}'", expected="auto, conllu or text")
    if decoder is not None and decoder not in DECODERS:
        raise BertkitError(f"unknown decoder '{decoder}'", expected="mst or eisner")
    parser, meta = load_parser(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision, console)
    path = Path(input_path)
    if not path.is_file():
        raise BertkitError("input file not found", file=path)
    is_conllu = input_format == "conllu" or (input_format == "auto" and _looks_like_conllu(path))
    if is_conllu:
        sents = read_conllu(path, labelled=False)
    else:
        pre = tokenizer.backend_tokenizer.pre_tokenizer
        from bertkit.data.conll import read_lines

        # lines end only at LF/CRLF: a lone CR or U+2028 never splits a sentence in two
        lines = [text for _, text in read_lines(path, old_mac=False)]
        sents = text_sentences(lines, pre.pre_tokenize_str if pre else str.split, str(path))
        if not sents:
            raise BertkitError("no sentences", file=path, expected="one sentence a line")
    max_length = fit_length(meta.get("max_length", 512), position_limit(parser.encoder.config),
                            console)
    heads, rels = parse_sentences(parser, tokenizer, sents, runtime, max_length,
                                  batch_size, decoder or meta.get("decoder", "mst"),
                                  meta.get("word_repr", "first"), console)
    text = format_conllu(sents, heads, rels)
    if output:
        write_text(output, text)
    return text


def _looks_like_conllu(path: Path) -> bool:
    """The first non-comment, non-blank line has 10 tab-separated columns."""
    with path.open(encoding="utf-8-sig", errors="replace") as handle:
        for line in handle:
            if line.strip() and not line.startswith("#"):
                return len(line.rstrip("\n").split("\t")) == 10
    return path.suffix in (".conllu", ".conll")

