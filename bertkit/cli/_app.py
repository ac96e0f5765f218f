"""The root Typer app and its command groups, wired in one place (spaCy's ``cli/_util.py`` pattern).

Each command group lives in its own file and registers commands on the sub-app defined here.
"""

from __future__ import annotations

import sys

import typer

from bertkit import __version__


def _readable_metavars() -> None:
    """Make ``--help`` show value types as click does (``TEXT``, ``INT``, ``FLOAT``, ``PATH``,
    ``CHOICE``) and nothing for switches (``--crf/--no-crf``), where typer 0.2x shows
    ``<str>``, ``<int range> [x>=1]``, ``<bool>``; arguments in the usage line as click
    writes them (``A B [MORE]...``, not ``{a} {b}``); with one space between the table's columns
    the longest option names (``--gradient-accumulation``) fit at 80 columns, where they were
    cut (issue 16). Ranges are still enforced; a value out of range names it. A no-op if
    typer's classes change (the help is then typer's own); tests/cli/test_help.py checks it."""
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:  # pragma: no cover - another typer
        return
    for cls in (TyperOption, TyperArgument):
        _patch_display_type(cls)
    if hasattr(TyperArgument, "_usage_display_name"):  # usage: "A B [MORE]...", not "{a} {b}"
        def usage_name(self) -> str:
            name = self.display_name_raw.upper()
            return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")

        TyperArgument._usage_display_name = usage_name
    from typer import rich_utils

    # one space between the option table's columns instead of two: the names fit at 80 columns
    if getattr(rich_utils, "STYLE_OPTIONS_TABLE_PADDING", None) == (0, 1):
        rich_utils.STYLE_OPTIONS_TABLE_PADDING = (0, 1, 0, 0)
    # typer 0.29 keeps a docstring's single line breaks after the first paragraph, so a
    # command's description wrapped at 100 columns in the source wraps unevenly at 80: join
    # them, as click does (a paragraph starting with \b keeps its lines, as in click)
    if getattr(rich_utils, "_fix_linebreaks", None) is not None:
        def fix_linebreaks(paragraphs, markup_mode) -> str:
            return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n"))
                                 for p in paragraphs)

        rich_utils._fix_linebreaks = fix_linebreaks
    # the same for a command's first paragraph in its group's command list
    if getattr(rich_utils, "_make_command_help", None) is not None:
        import inspect

        make_command_help = rich_utils._make_command_help

        def joined_command_help(*, help_text: str, markup_mode):
            first, sep, rest = inspect.cleandoc(help_text).partition("\n\n")
            if not first.startswith("\b"):
                first = " ".join(first.split("\n"))
            return make_command_help(help_text=first + sep + rest, markup_mode=markup_mode)

        rich_utils._make_command_help = joined_command_help
    _plain_value_errors()
    _plain_usage_errors(rich_utils)


def _plain_usage_errors(rich_utils) -> None:
    """A usage error (an unknown option, a value out of range or not among the choices) starts
    with ``error:`` as every other message does, instead of typer's boxed "Error" panel; the
    usage line and the ``--help`` hint stay above it. A no-op where typer's module differs."""
    original = getattr(rich_utils, "rich_format_error", None)
    if original is None or getattr(original, "_bertkit", False):
        return

    def rich_format_error(self) -> None:
        if self.__class__.__name__ == "NoArgsIsHelpError":
            return
        from rich.console import Console
        from rich.markup import escape

        console = Console(stderr=True)
        ctx = getattr(self, "ctx", None)
        if ctx is not None:
            console.print(escape(ctx.get_usage()), highlight=False, soft_wrap=True)
            if ctx.command.get_help_option(ctx) is not None:
                console.print(f"Try '{escape(ctx.command_path)} {ctx.help_option_names[0]}' "
                              f"for help.", highlight=False, soft_wrap=True)
        console.print("[bold red]error:[/] " + escape(self.format_message()), highlight=False,
                      soft_wrap=True)

    rich_format_error._bertkit = True
    rich_utils.rich_format_error = rich_format_error


def _plain_value_errors() -> None:
    """typer 0.29 validates choices through pydantic, whose message for a refused value starts
    with "Value error, " ("Invalid value for '--masking': Value error, 'foo' is not one of ...");
    drop that prefix. A no-op where typer's modules differ."""
    import importlib

    for name in ("typer._coercion", "typer._param_types"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - another typer
            continue
        original = getattr(module, "get_error_msg", None)
        if original is None or getattr(original, "_bertkit", False):
            continue

        def get_error_msg(exc, _original=original) -> str:
            return _original(exc).removeprefix("Value error, ")

        get_error_msg._bertkit = True
        module.get_error_msg = get_error_msg


def _patch_display_type(cls) -> None:
    original = getattr(cls, "display_type_rich", None)
    if original is None or getattr(original, "_bertkit", False):
        return
    names = {"str": "TEXT", "text": "TEXT", "int": "INT", "int range": "INT", "float": "FLOAT",
             "float range": "FLOAT", "path": "PATH", "file": "FILE", "directory": "DIR",
             "bool": "BOOL"}

    def display_type_rich(self, ctx):
        if self.metavar is not None:
            return self.metavar
        if getattr(self, "is_flag", False):
            return None
        shown = original(self, ctx)
        if not isinstance(shown, str) or not (shown.startswith("<") and ">" in shown):
            return shown
        label, rest = shown[1:].split(">", 1)
        if "|" in label:  # a choice list: the help text names the values; the column stays
            return "CHOICE" + rest  # narrow, so the longest option names fit at 80 columns
        return names.get(label, label.upper()) + rest

    display_type_rich._bertkit = True
    cls.display_type_rich = display_type_rich
    if hasattr(cls, "_get_number_range_help_str"):  # no "[x>=1]": the type column stays
        cls._get_number_range_help_str = lambda self: None  # narrow (an error states the range)


_readable_metavars()

app = typer.Typer(
    name="bertkit",
    help="Build domain-adapted BERT models: vocabularies, MLM pretraining, fine-tuning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
finetune_app = typer.Typer(help="Fine-tune an encoder on a labelled task.", no_args_is_help=True)
evaluate_app = typer.Typer(help="Score a saved model on a labelled split.", no_args_is_help=True)
predict_app = typer.Typer(help="Run a saved model on new text.", no_args_is_help=True)
bench_app = typer.Typer(help="Judge encoders on a benchmark suite (seeds, significance, "
                        "leaderboard).", no_args_is_help=True)

app.add_typer(finetune_app, name="finetune")
app.add_typer(evaluate_app, name="evaluate")
app.add_typer(predict_app, name="predict")
app.add_typer(bench_app, name="bench")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bertkit {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """bertkit: build domain-adapted BERT models from one tool."""


def make_console(stderr: bool = False):
    """A rich Console for a command's output. Written to a file or a pipe (not a terminal), a
    printed line is never wrapped at the console width (80 columns there): a model path or a
    settings line stays whole on its line; tables still fit the width."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console.soft_wrap = True
    return console


def user_errors(fn):
    """Decorate a command: a :class:`BertkitError` prints ``error: FILE:LINE: message`` and exits
    with its code (1); a run stopped by a signal (130/143: ``stopped by SIGINT at step N;
    checkpoint saved ...``) is not a failure and prints without ``error:``, as does one with exit
    code 0 (a ``--resume`` of a complete run), which exits 0."""
    import functools

    from bertkit.errors import BertkitError
    from bertkit.training.rundir import RunStopped

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BertkitError as exc:
            from rich.console import Console
            from rich.markup import escape

            if exc.exit_code == 0:  # not a failure: e.g. --resume of a run that is complete
                Console().print(escape(str(exc)), highlight=False, soft_wrap=True)
                raise typer.Exit(0) from None
            stopped = isinstance(exc, RunStopped)  # the user's Ctrl-C or a scheduler's SIGTERM
            Console(stderr=True).print(("" if stopped else "[bold red]error:[/] ") +
                                       escape(str(exc)), highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:  # elsewhere a Ctrl-C ended silently with status 130
            print("bertkit: interrupted (Ctrl-C)", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper
