"""The root Typer app and its command groups, wired in one place (spaCy's ``cli/_util.py`` pattern).

Each command group lives in its own file and registers commands on the sub-app defined here.
"""

from __future__ import annotations

import typer

from bertkit import __version__

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

app.add_typer(finetune_app, name="finetune")
app.add_typer(evaluate_app, name="evaluate")
app.add_typer(predict_app, name="predict")


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


def user_errors(fn):
    """Decorate a command: a :class:`BertkitError` prints ``error: FILE:LINE: message`` and exits
    with its code (1; 130/143 after a signal); one with exit code 0 (a ``--resume`` of a
    complete run) prints its message without ``error:`` and exits 0."""
    import functools

    from bertkit.errors import BertkitError

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
            Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                                       soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper
