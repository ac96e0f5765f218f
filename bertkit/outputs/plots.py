"""Loss and evaluation curves of a run, drawn from its ``metrics.jsonl`` as a PNG.

Training records (``"type": "train"``) give one line per loss component (``loss``, ``mlm_loss``,
``sbo_loss``, ...) against the optimiser step; evaluation records (``"type": "eval"``) give one
line per headline metric (entity F1, micro-F1, UAS/LAS, validation loss, perplexity, accuracy).
"""

from __future__ import annotations

import json
from pathlib import Path

from bertkit.errors import BertkitError
from bertkit.io import atomic_path

EVAL_KEYS = ("f1", "conlleval_f1", "micro_f1", "macro_f1", "accuracy", "uas", "las", "loss",
             "perplexity", "mlm_accuracy")


def read_metrics(path: Path) -> list[dict]:
    """The records of a ``metrics.jsonl`` file.

    Raises:
        BertkitError: the file is missing or a line is not a JSON object (file and line named).
    """
    if not path.is_file():
        raise BertkitError("no metrics.jsonl here", file=path, expected="a bertkit run directory")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BertkitError(f"not JSON: {exc.msg}", file=path, line=number) from None
        if not isinstance(rec, dict):
            raise BertkitError("not a JSON object", file=path, line=number)
        records.append(rec)
    return records


def _series(records: list[dict], kind: str, keys) -> dict[str, tuple[list, list]]:
    out: dict[str, tuple[list, list]] = {}
    for rec in records:
        if rec.get("type") != kind or "step" not in rec:
            continue
        split = rec.get("split")
        for key in keys(rec):
            value = rec.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                name = f"{split} {key}" if split else key
                xs, ys = out.setdefault(name, ([], []))
                xs.append(rec["step"])
                ys.append(value)
    return out


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Draw ``run_dir/metrics.jsonl`` into a PNG (default ``run_dir/curves.png``): training losses
    on the left, evaluation metrics on the right, both against the optimiser step.

    Returns:
        the PNG path.

    Raises:
        BertkitError: no metrics, or none that can be drawn.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    records = read_metrics(run_dir / "metrics.jsonl")
    train = _series(records, "train", lambda r: [k for k in r if k.endswith("loss")])
    evals = _series(records, "eval", lambda r: [k for k in EVAL_KEYS if k in r])
    if not train and not evals:
        raise BertkitError("no training or evaluation records to draw",
                           file=run_dir / "metrics.jsonl")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, series, title in ((axes[0], train, "training loss"), (axes[1], evals, "evaluation")):
        for name, (xs, ys) in sorted(series.items()):
            ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, label=name.replace("$", r"\$"))
        ax.set_title(title)
        ax.set_xlabel("optimiser step")
        if series:
            ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(run_dir.name, parse_math=False)
    fig.tight_layout()
    target = Path(out) if out else run_dir / "curves.png"
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return target
