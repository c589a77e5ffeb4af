"""The `iotuner` command line: one typer app; each command lives in `tuner/commands/`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from tuner import __version__
from tuner.commands import (
    advise,
    apply,
    bottleneck,
    daemon,
    history,
    lab,
    probe,
    report,
    rollback,
    rules,
    status,
    sweep,
    tune,
    verify,
)
from tuner.errors import IotunerError
from tuner.recovery import recover_if_needed

app = typer.Typer(
    name="iotuner",
    help="Bring a Linux host's real I/O throughput close to what its hardware can deliver.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)
app.command(name="probe")(probe.probe)
app.command(name="advise")(advise.advise)
app.command(name="tune")(tune.tune)
app.command(name="apply")(apply.apply)
app.add_typer(rules.app, name="rules")
app.command(name="rollback")(rollback.rollback)
app.command(name="history")(history.history)
app.command(name="verify")(verify.verify)
app.command(name="sweep")(sweep.sweep)
app.command(name="bottleneck")(bottleneck.bottleneck)
app.add_typer(lab.app, name="lab")
app.command(name="report")(report.report)
app.command(name="daemon")(daemon.daemon)
app.command(name="status")(status.status)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"iotuner {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Exit codes: 0 ok, 1 findings or failure, 2 bad input."""
    # Values a killed iotuner left changed are put back before anything else runs.
    recover_if_needed(ctx.invoked_subcommand)


def main() -> None:
    """Console-script entry point: run the app, turning iotuner's errors into one line."""
    try:
        app()
    except IotunerError as err:
        Console(stderr=True).print(f"[bold red]iotuner:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
