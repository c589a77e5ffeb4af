"""The `iotuner` command line: one typer app; each command lives in `tuner/commands/`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tuner import __version__
from tuner.cli_help import ARGS_KEY, Group, add_command, examples
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
from tuner.console import print_error
from tuner.errors import IotunerError
from tuner.recovery import before_command

app = typer.Typer(
    name="iotuner",
    help="Bring a Linux host's real I/O throughput close to what its hardware can deliver.\n\n"
    "Exit codes: 0 ok, 1 failure (or findings with advise --exit-code), 2 bad input. Every "
    "command has --help with examples and --json; `iotuner --install-completion` adds shell "
    "completion, `man iotuner` is the manual (docs/iotuner.1).",
    epilog=examples("iotuner"),
    no_args_is_help=True,
    cls=Group,
    rich_markup_mode="markdown",
)
add_command(app, "probe", probe.probe)
add_command(app, "advise", advise.advise)
add_command(app, "tune", tune.tune)
add_command(app, "apply", apply.apply)
app.add_typer(rules.app, name="rules")
add_command(app, "rollback", rollback.rollback)
add_command(app, "history", history.history)
add_command(app, "verify", verify.verify)
add_command(app, "sweep", sweep.sweep)
add_command(app, "bottleneck", bottleneck.bottleneck)
app.add_typer(lab.app, name="lab")
add_command(app, "report", report.report)
add_command(app, "daemon", daemon.daemon)
add_command(app, "status", status.status)


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
    """Exit codes: 0 ok, 1 failure (or findings with advise --exit-code), 2 bad input."""
    # A command that changes the host first puts back what a killed iotuner left changed; one
    # that only reads (and every --help) says what is left and writes nothing.
    before_command(ctx.invoked_subcommand, ctx.meta.get(ARGS_KEY, []))


def main() -> None:
    """Console-script entry point: run the app, turning iotuner's errors into one line."""
    try:
        app()
    except IotunerError as err:
        print_error(err)
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
