"""What the tasks share: reading the split name, reporting skipped lines and labels unseen in
training, the prediction JSON lines, the test-split output files and the balanced class
weights of the loss.

A plain module, not a task package: it imports no task, so any task may use it
(``tests/test_import_graph.py`` checks that no task package imports another).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

from bertkit.errors import BertkitError

SPLIT_NAMES = {"valid": "dev", "validation": "dev"}
CLASS_WEIGHTS = ("none", "balanced")  # the loss weightings of finetune cls and re


def parse_split(split: str) -> str:
    """The split name ``evaluate`` scores: ``train``, ``dev`` (also ``valid``/``validation``) or
    ``test``.

    Raises:
        BertkitError: any other name.

    >>> parse_split("validation")
    'dev'
    """
    split = SPLIT_NAMES.get(split, split)
    if split not in ("train", "dev", "test"):
        raise BertkitError(f"unknown split '{split}'", expected="train, dev (valid) or test")
    return split


def warn_bad_lines(lines: Iterable[Any], console=None, shown: int = 20) -> int:
    """Print the first ``shown`` skipped bad lines (each as ``str(line)``) and how many more there
    were on ``console`` (None: print nothing). Returns the number of bad lines."""
    from rich.markup import escape

    lines = list(lines)
    if console and lines:
        for b in lines[:shown]:
            console.print(f"[yellow]skipped bad line:[/] {escape(str(b))}", highlight=False)
        if len(lines) > shown:
            console.print(f"[yellow]… {len(lines) - shown} more bad lines skipped",
                          highlight=False)
    return len(lines)


def warn_notes(notes: Iterable[str], console=None) -> int:
    """Print each of ``notes`` as a warning on ``console`` (None: print nothing), escaped (a
    label such as ``[x]`` in a note is shown as written). Returns the number of notes."""
    from rich.markup import escape

    notes = list(notes)
    if console:
        for note in notes:
            console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False)
    return len(notes)


def example_key(example: Any) -> tuple:
    """What makes two examples the same input, for the train/dev/test overlap check: the words of
    a sentence (NER ``tokens``, dependency ``words``), a relation example's text with its two
    entities, a QA question with its context, or a text (and its pair) with surrounding white
    space removed. An example type of a new task says its own by an ``overlap_key()`` method
    (checked first), so this function needs no change for it.

    >>> class Q:
    ...     def overlap_key(self): return ("q", "what?")
    >>> example_key(Q())
    ('q', 'what?')
    """
    own = getattr(example, "overlap_key", None)
    if callable(own):
        return tuple(own())
    for name in ("tokens", "words"):
        if hasattr(example, name):
            return (name, tuple(getattr(example, name)))
    if hasattr(example, "e1"):
        return ("pair", example.text, repr(example.e1), repr(example.e2))
    if hasattr(example, "question") and hasattr(example, "context"):  # extractive QA
        return ("qa", example.question.strip(), example.context.strip())
    return ("text", str(getattr(example, "text", example)).strip(),
            (getattr(example, "text_pair", None) or "").strip())


def shared_examples(splits: Mapping[str, Sequence[Any]], against: str = "train"
                    ) -> dict[str, list[tuple[Any, Any]]]:
    """Examples of each other split that also occur in split ``against`` (the same input, by
    :func:`example_key`), as ``{split: [(example, its first copy in against), ...]}``; splits
    without any are left out.

    >>> shared_examples({"train": ["a", "b"], "test": ["b", "c", " a"]})["test"]
    [('b', 'b'), (' a', 'a')]
    """
    seen: dict[tuple, Any] = {}
    for ex in splits.get(against) or []:
        seen.setdefault(example_key(ex), ex)
    out = {}
    for split, examples in splits.items():
        if split == against:
            continue
        found = [(ex, seen[k]) for ex in examples or [] if (k := example_key(ex)) in seen]
        if found:
            out[split] = found
    return out


def warn_shared(splits: Mapping[str, Sequence[Any]], unit: str = "examples", console=None,
                shown: int = 3) -> dict[str, int]:
    """Warn, per split, how many of its examples also occur in train (:func:`shared_examples`),
    with the first ``shown`` as ``file:line = file:line``: scores on them measure memory, not
    generalisation. Returns ``{split: count}`` (splits with none left out); prints nothing
    without a console."""
    from rich.markup import escape

    found = shared_examples(splits)
    if console:
        for split, pairs in found.items():
            where = "; ".join(f"{_place(ex)} = {_place(first)}" for ex, first in pairs[:shown])
            more = f"; {len(pairs) - shown} more" if len(pairs) > shown else ""
            console.print(f"[yellow]warning:[/] {len(pairs)} of {len(splits[split])} {split} "
                          f"{unit} also in train ({escape(where + more)}): scores on them "
                          f"measure memory, not generalisation", highlight=False)
    return {split: len(pairs) for split, pairs in found.items()}


def _place(example: Any) -> str:
    """``file:line`` of an example, the file by its name (the splits share a folder); a question
    of a SQuAD JSON file (no line) by its id."""
    line = getattr(example, "line", "?")
    if line is None and hasattr(example, "qid"):
        line = f"question {example.qid}"
    return f"{Path(str(getattr(example, 'file', '?'))).name}:{line}"


def first_unseen(known: Iterable[str],
                 uses: Iterable[tuple[str, str, int]]) -> dict[str, tuple[str, int]]:
    """Labels of ``uses`` (``(label, file, 1-based line)`` in file order) that are not in
    ``known``, each with the (file, line) of its first use.

    >>> first_unseen({"a"}, [("a", "f", 1), ("b", "f", 2), ("b", "f", 3)])
    {'b': ('f', 2)}
    """
    known, found = set(known), {}
    for label, file, line in uses:
        if label not in known and label not in found:
            found[label] = (file, line)
    return found


def warn_unseen(found: Mapping[str, tuple[str, int]], split: str, what: str,
                console=None, against: str = "train") -> int:
    """Warn, once per label, that a ``split`` label is unknown to the model, so it cannot be
    predicted and is scored as missed: ``against`` ``"train"`` (fine-tuning: the label never
    occurs in the training data) or ``"model"`` (evaluate: not among the saved model's labels).
    ``found`` maps each label to the (file, 1-based line) of its first use (:func:`first_unseen`);
    ``what`` names the label kind ("entity type", "label", "relation"). Returns the number of such
    labels; prints nothing without a console.

    >>> warn_unseen({"Disease": ("test.tsv", 7)}, "test", "entity type")
    1
    """
    from rich.markup import escape

    where = "not in train" if against == "train" else "not among the model's labels"
    if console:
        for label, (file, line) in found.items():
            console.print(f"[yellow]warning:[/] {file}:{line}: {what} '{escape(label)}' occurs in "
                          f"{split} but {where}: the model cannot predict it (scored as missed)",
                          highlight=False)
    return len(found)


def prediction_line(raw: Mapping[str, Any], line: int | None, predicted: Any,
                    extra: Mapping[str, Any]) -> str:
    """One JSON line of ``test_predictions.jsonl`` and of ``predict``'s output: the input object
    ``raw`` with ``line`` (1-based line of the input file), ``predicted`` and ``extra``
    (``probability`` or ``probabilities``) added, newline-terminated, non-ASCII kept except the
    characters that other readers take for line ends (U+0085, U+2028, U+2029: escaped), so
    every record stays one line."""
    text = json.dumps({**raw, "line": line, "predicted": predicted, **extra}, ensure_ascii=False)
    for ch in LINE_BREAKS:
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text + "\n"


LINE_BREAKS = ("\x85", "\u2028", "\u2029")  # line ends to str.splitlines, not to JSON


def write_label_outputs(stem: str | Path | None, predictions: str | Path | None,
                        lines: str, metrics: dict, title: str) -> None:
    """Write a classification split's files, each atomically: the prediction JSON lines to
    ``predictions`` and the confusion matrix as ``<stem>.csv``/``<stem>.png``
    (:func:`bertkit.metrics.cls.save_confusion`; only when ``metrics["confusion"]`` is a matrix,
    not for multi-label scores). None leaves that file out."""
    from bertkit.io import write_text
    from bertkit.metrics.cls import save_confusion

    if predictions:
        write_text(predictions, lines)
    if stem and metrics.get("confusion") is not None:
        save_confusion(stem, metrics["labels"], metrics["confusion"], title)


def write_test_outputs(run_dir: Path, lines: str, metrics: dict, title: str) -> None:
    """A finished run's ``test_predictions.jsonl`` and ``test_confusion.{csv,png}``
    (:func:`write_label_outputs`)."""
    run_dir = Path(run_dir)
    write_label_outputs(run_dir / "test_confusion", run_dir / "test_predictions.jsonl", lines,
                        metrics, title)


def balanced_weights(counts: Sequence[int]) -> torch.Tensor:
    """scikit-learn's ``balanced`` class weights ``N / (C * count_c)`` (0 for an absent class),
    as ``[C]`` float32 for a weighted cross-entropy (``--class-weights balanced``).

    Args:
        counts: training examples per label, in label-id order.

    >>> balanced_weights([30, 10]).tolist()
    [0.6666666865348816, 2.0]
    """
    counts = torch.tensor(list(counts), dtype=torch.float32)
    total, classes = counts.sum(), (counts > 0).sum()
    return torch.where(counts > 0, total / (classes * counts.clamp(min=1)),
                       torch.zeros_like(counts))


def class_weights(setting: str, labels: Sequence[str], examples: Iterable[Any]
                  ) -> torch.Tensor | None:
    """The loss weights a ``class_weights`` setting asks for: None for ``none``, else
    :func:`balanced_weights` of the training labels (``example.label``: one label, or a list of
    labels for multi-label data), ``[len(labels)]`` in the order of ``labels``.

    Raises:
        BertkitError: a setting other than ``none`` or ``balanced``.
    """
    if setting == "none":
        return None
    if setting != "balanced":
        raise BertkitError(f"class weights '{setting}'", expected="none or balanced")
    from collections import Counter

    counts = Counter(lab for ex in examples
                     for lab in (ex.label if isinstance(ex.label, list) else [ex.label]))
    return balanced_weights([counts[lab] for lab in labels])


META_FILE = "bertkit.json"  # beside the Hugging Face files of every saved model/


def write_saved_model(model: torch.nn.Module, tokenizer, directory: str | Path, task: str,
                      meta: dict, weights: dict[str, torch.nn.Module] | None = None) -> None:
    """The one saved-model format of every task: a Hugging Face model (``save_pretrained``: a
    plain Auto-class model, or the encoder of a task with its own head), its tokenizer, bertkit's
    meta file ``{"task": task, **meta, "vocab_sha256": ...}`` (the vocabulary's checksum,
    :func:`bertkit.vocab.match.vocab_checksum`) and, for a task's own head (the CRF, the biaffine parser),
    each of ``weights`` as ``{file name: module}`` in safetensors."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    for name, module in (weights or {}).items():
        save_file({k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()},
                  str(directory / name))
    from bertkit.vocab.match import vocab_checksum

    meta = {"task": task, **meta, "vocab_sha256": vocab_checksum(tokenizer)}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def find_saved_model(directory: str | Path, task: str, what: str,
                     files: tuple[str, ...] = (), untagged: bool = False) -> tuple[Path, dict]:
    """The saved ``model/`` of a ``finetune task`` run (given the run directory or ``model/``)
    and its meta file, checked: it is a model of ``task`` and holds ``files``.

    Args:
        what: the model's kind in messages ("NER", "question-answering").
        files: files the model needs beside the Hugging Face ones (``parser.safetensors``).
        untagged: accept a meta file without ``task`` (saved before bertkit wrote one).

    Returns:
        (the model directory, the meta with ``path``).

    Raises:
        BertkitError: no saved bertkit model of ``task`` there (another task's is named).
    """
    path = Path(directory).expanduser()
    if not path.exists():
        if path.name == "model":  # the model/ of a run that stopped before saving it
            _stopped_run(path.parent, task)
        raise BertkitError("not found", file=path,
                           expected=f"a run directory of 'finetune {task}' or its model/")
    if (path / "model" / META_FILE).is_file():
        path = path / "model"
    meta_file = path / META_FILE
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    found = meta.get("task", task if untagged and meta else None)
    expected = f"a run directory of 'finetune {task}' (model/{META_FILE}" + \
        "".join(f" and model/{f}" for f in files) + ")"
    if found is not None and found != task:
        made_by = {"pretrain": "bertkit pretrain (a masked LM)",
                   "vocab extend": "bertkit vocab extend (a masked LM)"}.get(
            found, f"'finetune {found}'")
        raise BertkitError(f"this is the saved model of {made_by}, not of 'finetune {task}'",
                           file=path, expected=expected)
    if found != task or not all((path / f).is_file() for f in files):
        _stopped_run(Path(directory).expanduser(), task)
        seeds = sorted(p.parent.parent.name for p in path.glob(f"seed-*/model/{META_FILE}"))
        if seeds:  # the root of a --seeds run: one model per seed, none at the root
            raise BertkitError(
                f"this is a multi-seed run (--seeds) with one model per seed ({', '.join(seeds)}),"
                " not one model", file=path, expected=f"one seed's run directory, e.g. "
                f"{path / seeds[0]}")
        raise BertkitError(f"no saved bertkit {what} model here", file=path, expected=expected)
    meta["path"] = str(path)
    return path, meta


def _stopped_run(run: Path, task: str) -> None:
    """Raise a message pointing to ``--resume`` when ``run`` is a training run that stopped
    (step checkpoints, no ``results.json``) before it saved its model.

    Raises:
        BertkitError: it is such a run.
    """
    from bertkit.training.rundir import last_checkpoint_of_stopped_run

    checkpoint = last_checkpoint_of_stopped_run(run)
    if checkpoint is not None:
        step = checkpoint.name.removeprefix("step_")
        raise BertkitError(f"this run stopped at step {step}: finish it with --resume (it "
                           f"stopped before it saved its model; last checkpoint: "
                           f"{checkpoint.name})", file=run,
                           expected=f"a finished run: continue this one with the 'bertkit "
                                    f"finetune {task}' command that started it, plus --resume "
                                    f"--output-dir {run}")


def build_pretrained(loader: Callable, model_name: str, purpose: str, **kwargs):
    """``loader(model_name, attn_implementation=..., **kwargs)`` (an Auto class's
    ``from_pretrained`` with a new task head; SDPA where the architecture has it,
    :func:`bertkit.encoders.attention_implementation`) for an encoder to fine-tune, its load
    errors as one message.

    Args:
        purpose: what the model is for, in the message (``question answering``).

    Raises:
        BertkitError: the encoder cannot be loaded (names it and ``purpose``).
    """
    from bertkit.encoders import LOAD_ERRORS, _short, attention_implementation, quiet_transformers

    quiet_transformers()
    try:
        return loader(model_name, attn_implementation=attention_implementation(model_name),
                      **kwargs)
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load model '{model_name}' for {purpose}: {_short(exc)}",
                           expected="a BERT-family encoder directory or hub id") from None


def load_pretrained(loader: Callable, path: str | Path, **kwargs):
    """``loader(path, attn_implementation=..., **kwargs)`` (a ``from_pretrained``; SDPA where
    the architecture has it, :func:`bertkit.encoders.attention_implementation`) for a saved
    model, its load errors as one message.

    Raises:
        BertkitError: the saved files cannot be loaded (incomplete, truncated).
    """
    from bertkit.encoders import LOAD_ERRORS, _short, attention_implementation, quiet_transformers

    quiet_transformers()
    try:
        return loader(path, attn_implementation=attention_implementation(path), **kwargs)
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load the saved model: {_short(exc)}", file=path,
                           expected="the model/ folder bertkit saved (complete, not truncated)"
                           ) from None


def read_saved_model(directory: str | Path, task: str, what: str, auto_class):
    """Load what :func:`write_saved_model` wrote for a plain Auto-class model, from a run
    directory or its ``model/`` (:func:`find_saved_model`).

    Args:
        what: the model's kind in messages ("text-classification", "question-answering").
        auto_class: the ``transformers`` Auto class to load it with.

    Returns:
        (model in eval mode, meta with ``path``).

    Raises:
        BertkitError: no saved bertkit ``task`` model there, or its files cannot be loaded.
    """
    path, meta = find_saved_model(directory, task, what)
    model = load_pretrained(auto_class.from_pretrained, path)
    model.eval()
    return model, meta
