"""A bench stage's fine-tuning settings, built the one way ``bertkit finetune`` builds them.

The one place bench depends on how settings are layered: issue 46's builder
(:func:`bertkit.settings.finetune_settings`) where it exists, else what main has had so far,
:func:`bertkit.recipes.settings_with_sources` (defaults < the data set's dev-chosen recipe for
the packaged encoder < ``--recipe`` < flags), the layers ``finetune`` uses in either case. The stage's subprocess runs ``bertkit finetune TASK --recipe STAGE/recipe.yaml -o
RUN``: the same builder over the same layers, so a bench run and that command train identically.
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


def finetune_settings(task: str, recipe_file: Path, output_dir: Path
                      ) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings ``bertkit finetune TASK --recipe RECIPE_FILE -o OUTPUT_DIR`` will train with.

    Args:
        task: a registered task kind (``ner``).
        recipe_file: the stage's recipe (:func:`recipe_text`: data, model, seed, the suite's
            recipe and caps).
        output_dir: the run directory.

    Returns:
        ``(settings, sources)``: every setting (less :data:`NOT_COMPARED`) and where each that
        is not a built-in default came from (``recipe``, ``data-set default``).

    Raises:
        BertkitError: an unknown setting or a value of the wrong type (naming the recipe file).
    """
    try:  # issue 46: one settings builder for every command
        from bertkit.settings import finetune_settings as build
    except ImportError:
        build = None
    if build is not None:
        built = build(task, recipe=recipe_file)
        cfg, sources = built.config, built.sources
    else:
        from bertkit.recipes import settings_with_sources
        from bertkit.tasks.registry import TASKS, load_attr

        config_cls = load_attr(TASKS[task].config)
        cfg, sources = settings_with_sources(config_cls, f"finetune {task}",
                                             {"output_dir": str(output_dir)}, recipe_file)
    cfg.validate()
    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_COMPARED}
    return settings, {k: v for k, v in sources.items() if k not in NOT_COMPARED}
