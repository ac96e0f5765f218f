"""The report's figure: per task, each encoder's seed scores as points with their mean."""

from __future__ import annotations

from pathlib import Path


def plot_seeds(report: dict, path: Path) -> Path:
    """One panel per task; x: encoders, y: test score (points); dots: seeds, bar: mean.

    Writes ``path`` (PNG) atomically and returns it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bertkit.io import atomic_path

    encoders = list(report["encoders"])
    tasks = sorted({t for e in report["encoders"].values() for t in e["tasks"]})
    cols = min(4, max(1, len(tasks)))
    rows = max(1, -(-len(tasks) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        for x, enc in enumerate(encoders):
            cell = report["encoders"][enc]["tasks"].get(task)
            if not cell:
                continue
            ax.scatter([x] * len(cell["scores"]), cell["scores"], s=14, alpha=0.7)
            ax.hlines(cell["mean"], x - 0.3, x + 0.3, colors="black", linewidth=1.5)
        ax.set_title(task, fontsize=9)
        ax.set_ylabel("test score (points)", fontsize=7)
        ax.set_xticks(range(len(encoders)), encoders, fontsize=7, rotation=30)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    # the lite note already names the budget ("lite: not comparable ...")
    title = f"bench {report['suite']} ({report.get('note') or report['budget']})"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return path
