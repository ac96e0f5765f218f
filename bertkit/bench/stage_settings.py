"""A bench stage's fine-tuning settings, built the one way ``bertkit finetune`` builds them.

The one place bench depends on how settings are layered: the one settings builder,
:func:`bertkit.workflows.command_settings.finetune_settings` (defaults < the data set's dev-chosen recipe for the
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


def compared_settings(task: str, recipe_file: Path) -> tuple[dict[str, Any], dict[str, str]]:
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
    from bertkit.workflows.command_settings import finetune_settings as build

    built = build(task, recipe=recipe_file)
    cfg, sources = built.config, built.sources
    cfg.validate()
    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_COMPARED}
    return settings, {k: v for k, v in sources.items() if k not in NOT_COMPARED}


def suite_stage_settings(suite, task, layer: dict[str, Any],
                         where: str = "its defaults, recipe or lite settings",
                         ) -> tuple[dict[str, Any], dict[str, str]]:
    """:func:`compared_settings` of a suite task's settings ``layer`` (the suite's defaults,
    recipe or lite caps, data set, encoder, seed), checked in a temporary recipe so that nothing
    is written before the check passes; ``where`` names the suite's layers the error is in.

    Raises:
        BertkitError: an unknown setting or a bad value, naming the suite file and the task's
            line (not the temporary recipe).
    """
    import tempfile

    from bertkit.errors import BertkitError

    with tempfile.TemporaryDirectory() as tmp:
        recipe = Path(tmp) / "recipe.yaml"
        recipe.write_text(recipe_text(task.task, layer), encoding="utf-8")
        try:
            return compared_settings(task.task, recipe)
        except BertkitError as e:
            tmp_file = str(recipe)
            raise BertkitError(
                f"task {task.name} ({where}): "
                + e.message.replace(f" in {tmp_file}", "").replace(tmp_file, "the recipe"),
                file=suite.path, line=task.line, expected=e.expected) from None


def check_suite_settings(suite) -> list:
    """The suite's tasks whose settings ``bertkit bench run`` would refuse, under either budget
    (one :class:`~bertkit.errors.BertkitError` each, with the file and line); tasks whose kind
    or data set is not registered are left to :func:`bertkit.bench.suite.check_suite`."""
    from bertkit.bench.suite import check_suite, task_settings
    from bertkit.errors import BertkitError

    skip = {e.line for e in check_suite(suite)}
    problems = []
    for t in suite.tasks:
        if t.line in skip:
            continue
        def attempt(layer: dict, where: str):
            try:
                suite_stage_settings(suite, t, {**layer, "data": t.data, "seed": suite.seeds[0]},
                                     where)
            except BertkitError as e:
                return e
            return None

        # which layer holds the bad setting: the suite's defaults (if they alone fail the same
        # way), else the task's recipe; the lite caps where only the lite budget fails
        bad = attempt(task_settings(suite, t, "full"), "its recipe")
        if bad is not None:
            alone = attempt(dict(suite.defaults), "the suite's defaults")
            if alone is not None and _said(alone) == _said(bad):
                bad = alone
        else:
            bad = attempt(task_settings(suite, t, "lite"), "its lite caps")
        if bad is not None:
            problems.append(bad)
    return problems


def _said(error) -> str:
    """An error's message less its ``task NAME (LAYER): `` prefix."""
    return error.message.partition("): ")[2]
