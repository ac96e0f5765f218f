"""A bench stage's fine-tuning settings, built the one way ``bertkit finetune`` builds them.

The one place bench depends on how settings are layered: the one settings builder,
:func:`bertkit.settings.finetune_settings` (defaults < the data set's dev-chosen recipe for the
packaged encoder < ``--recipe`` < flags), the layers ``finetune`` uses. The stage's subprocess
runs ``bertkit finetune TASK --recipe STAGE/recipe.yaml -o RUN``: the same builder over the same
layers, so a bench run and that command train identically.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

# settings that say where a run writes or how it continues, not how it trains
NOT_COMPARED = ("output_dir", "resume", "overwrite", "report_to", "logging_steps")


def recipe_text(task: str, settings: dict[str, Any]) -> str:
    """A ``bertkit finetune TASK`` recipe (YAML) holding ``settings``."""
    import yaml

    return yaml.safe_dump({"description": "written by bertkit bench",
                           "command": f"finetune {task}", "settings": settings},
                          sort_keys=False)


def finetune_settings(task: str, recipe_file: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings ``bertkit finetune TASK --recipe RECIPE_FILE`` will train with (the run
    directory is not compared: :data:`NOT_COMPARED`).

    Args:
        task: a registered task kind (``ner``).
        recipe_file: the stage's recipe (:func:`recipe_text`: data, model, seed, the suite's
            recipe and caps).

    Returns:
        ``(settings, sources)``: every setting (less :data:`NOT_COMPARED`) and where each that
        is not a built-in default came from (``recipe``, ``data-set default``).

    Raises:
        BertkitError: an unknown setting or a value of the wrong type (naming the recipe file).
    """
    from bertkit.settings import finetune_settings as build

    built = build(task, recipe=recipe_file)
    cfg, sources = built.config, built.sources
    cfg.validate()
    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_COMPARED}
    return settings, {k: v for k, v in sources.items() if k not in NOT_COMPARED}
