"""One builder for every registered task's ``finetune``, ``evaluate`` and ``predict`` commands.

A task declares its surface as data (:mod:`bertkit.settings.options`): its settings dataclass marks the
fields that are ``finetune`` options, and its config module's :class:`~bertkit.settings.options.Commands`
gives the commands' help and the ``evaluate``/``predict`` options. :func:`command` turns one
declaration into a typer command function with the signature typer reads, so the command line
has no per-task code: a task registered in :mod:`bertkit.tasks.registry` has its three commands.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Optional

import typer

from bertkit.settings.options import REQUIRED, Option, field_options, shown_default


def _help(opt: Option, task: str) -> str:
    if "{sets}" not in opt.help:
        return opt.help
    from bertkit.data.sets import registered

    return opt.help.replace("{sets}", ", ".join(registered(task)))


def _value_type(opt: Option, hint: Any = None) -> Any:
    """The option's value type: its choices as a Literal, else ``opt.type``, else ``hint`` less
    None (a field's annotation)."""
    if opt.choices:
        return Literal[tuple(opt.choices)]
    kind = opt.type if opt.type is not None else hint
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return args[0] if args and typing.get_origin(kind) is not Literal else kind


def _typer_option(opt: Option, task: str, kind: Any, help_text: str | None = None) -> Any:
    """The ``typer.Option`` (or ``typer.Argument``, for a positional one) of ``opt``."""
    extra = {k: v for k, v in (("min", opt.min), ("max", opt.max)) if v is not None}
    if not opt.case_sensitive:
        extra["case_sensitive"] = False
    text = help_text if help_text is not None else _help(opt, task)
    if opt.positional:
        return typer.Argument(help=text, show_default=False, **extra)
    return typer.Option(*opt.flags, help=text, **extra)


def settings_parameters(config_class: type, task: str = "",
                        skip: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    """A command's parameters, generated from the options declared on ``config_class``'s
    fields (:func:`bertkit.settings.options.field_options`: its own, then its base classes', the
    loop's last; ``skip`` leaves some out). Each defaults to None (not given: the recipe's or
    the dataclass's value stands); ``--help`` shows the field's default
    (:func:`bertkit.settings.options.shown_default`) or the option's ``shown`` text, so no default is
    written twice. A field without a default is a required option (or argument)."""
    hints = typing.get_type_hints(config_class)
    defaults = {f.name: f.default for f in dataclasses.fields(config_class)}
    params = []
    for opt in field_options(config_class, skip):
        kind = _value_type(opt, hints[opt.name])
        if opt.repeat:  # a comma-joined text setting takes paths, unless a type is declared
            kind = list[opt.type] if opt.type is not None else \
                list[Path] if kind in (str, Path) else list[kind]
        required = defaults[opt.name] is dataclasses.MISSING
        shown = opt.shown if opt.shown is not None else \
            None if required else shown_default(opt.name, defaults[opt.name], opt.flags)
        text = _help(opt, task) + (f" \\[default: {shown}]" if shown else "")
        params.append(inspect.Parameter(
            opt.name, inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if required else None,
            annotation=Annotated[kind if required else Optional[kind],
                                 _typer_option(opt, task, kind, text)]))
    return params


finetune_parameters = settings_parameters


def settings_values(config_class: type, values: dict[str, Any]) -> dict[str, Any]:
    """The command line's values as a settings layer: a repeated option's values joined by
    commas, paths as text (None: not given)."""
    repeat = {o.name for o in field_options(config_class) if o.repeat}
    out = {}
    for key, value in values.items():
        if key in repeat and value is not None:
            value = ",".join(str(v) for v in value) or None
        out[key] = str(value) if isinstance(value, Path) else value
    return out


def settings_command(config_class: type, body: Callable[..., Any], doc: str, task: str = "",
                     skip: tuple[str, ...] = ()) -> Callable:
    """A command whose options are ``config_class``'s declared settings plus ``--recipe``
    (last): ``body(flags, recipe)`` runs it, ``flags`` the settings layer of
    :func:`settings_values`."""
    from bertkit.cli._options import Recipe

    params = settings_parameters(config_class, task, skip) + [inspect.Parameter(
        "recipe", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Recipe)]

    def run(recipe=None, **values):
        return body(settings_values(config_class, values), recipe)

    return command(run, params, doc)


def declared_command(config_class: type, body: Callable[[Any], Any], doc: str) -> Callable:
    """A command whose options and arguments are ``config_class``'s declared fields (a settings
    class without recipe layers, such as :class:`bertkit.vocab.options.VocabBuildSettings`):
    ``body(settings)`` runs it with the class built from the given values (an option not given
    keeps the field's default)."""
    params = settings_parameters(config_class)

    def run(**values):
        return body(config_class(**{k: v for k, v in values.items() if v is not None}))

    return command(run, params, doc)


def inference_parameters(options: tuple[Option, ...], task: str) -> list[inspect.Parameter]:
    """The parameters of an ``evaluate``/``predict`` command (required ones first, as given)."""
    from bertkit.cli import _options as opt

    params = []
    for o in options:
        kind = _value_type(o)
        if o.name == "precision":
            kind, text = opt.PrecisionChoice, opt.PRECISION_HELP
        else:
            text = None
        required = o.default is REQUIRED
        if not required and o.default is None:
            kind = Optional[kind]
        params.append(inspect.Parameter(
            o.name, inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if required else o.default,
            annotation=Annotated[kind, _typer_option(o, task, kind, text)]))
    return params


def command(body: Callable[..., Any], params: list[inspect.Parameter], doc: str) -> Callable:
    """A function typer reads as a command: ``body(**values)`` behind ``params`` and ``doc``."""
    def fn(**values):
        return body(**values)

    fn.__signature__ = inspect.Signature(params)
    fn.__annotations__ = {p.name: p.annotation for p in params}
    fn.__doc__ = inspect.cleandoc(doc)
    return fn


def inference_command(run: Callable[..., Any], verb: str) -> Callable[[str, type], Callable]:
    """``make`` for :func:`register_all` of ``evaluate``/``predict``: the command of a task runs
    ``run(task name, **values)`` behind the options and help the task declares for ``verb``."""
    def make(name: str, config_class: type) -> Callable:
        commands = config_class.commands
        return command(lambda **values: run(name, **values),
                       inference_parameters(getattr(commands, f"{verb}_options"), name),
                       getattr(commands, verb))

    return make


def register_all(app: typer.Typer, make: Callable[[str, type], Callable]) -> dict:
    """Register a command on ``app`` (the ``finetune``, ``evaluate`` or ``predict`` group) for
    every registered task: ``make(name, config_class)`` gives the command function.

    Returns:
        ``{name: command function}``.
    """
    from bertkit.cli._app import user_errors
    from bertkit.tasks.registry import TASKS, load_attr

    made = {}
    for name, entry in TASKS.items():
        fn = make(name, load_attr(entry.config))
        fn.__name__ = fn.__qualname__ = f"{name}_cli"
        made[name] = app.command(name)(user_errors(fn))
    return made
