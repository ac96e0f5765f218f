"""``bertkit adapt``: thin wrapper over :func:`bertkit.workflows.adapt.adapt`; its options are
:class:`~bertkit.workflows.adapt_config.AdaptConfig`'s declared fields."""

from __future__ import annotations

from bertkit.cli._app import app, make_console, user_errors
from bertkit.cli._tasks import settings_command
from bertkit.workflows.command_settings import build_settings
from bertkit.workflows.adapt_config import AdaptConfig


def _adapt(flags: dict, recipe) -> None:
    from bertkit.workflows.adapt import adapt

    built = build_settings(AdaptConfig, "adapt", flags=flags, recipe=recipe)
    console = make_console()
    console.print(built.line(), highlight=False, markup=False)
    adapt(built.config, console)


adapt_cli = app.command("adapt")(user_errors(settings_command(AdaptConfig, _adapt, """
    Adapt an encoder to a domain and task, then fine-tune it: optional vocabulary extension,
    continued MLM on a domain corpus (DAPT) and/or the task's own training text (TAPT;
    Gururangan et al. 2020), fine-tuning, and with --compare the unadapted baseline beside it.

    Example: bertkit adapt --task ner --data bc5cdr --task-text ner:bc5cdr --compare --seeds 1,2,3
    """)))
