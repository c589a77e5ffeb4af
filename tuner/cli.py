"""The `iotuner` command line: one typer app; each command lives in `tuner/commands/`."""

from __future__ import annotations

import sys
from typing import Annotated, ClassVar

import typer

from tuner.cli_help import ARGS_KEY, Lazy, LazyGroup, examples
from tuner.errors import IotunerError


class Commands(LazyGroup):
    """Every `iotuner` command, imported when it is run (tuner/cli_help.py `LazyGroup`).

    In the order typer listed them when they were registered: commands, then the groups.
    """

    lazy: ClassVar[dict[str, Lazy]] = {
        "probe": Lazy(
            "tuner.commands.probe:probe",
            "Discover PCI links, controllers, disks, storage stacks, NICs, IRQs and NUMA layout.",
        ),
        "advise": Lazy(
            "tuner.commands.advise:advise",
            "Run the rule base over the host: findings grouped by severity, each with its source.",
        ),
        "tune": Lazy(
            "tuner.commands.tune:tune",
            "Measure the baseline, search host settings with short fio trials, confirm the winner.",
        ),
        "apply": Lazy(
            "tuner.commands.apply:apply",
            "Apply a plan: udev rules, a sysctl.d file and a boot unit, and the live values at "
            "once.",
        ),
        "rollback": Lazy(
            "tuner.commands.rollback:rollback",
            "Restore every journaled original still changed (exit 1 if any could not be).",
        ),
        "history": Lazy(
            "tuner.commands.history:history",
            "List the plans in force, then every apply, newest first: when, its plan, each value "
            "it set (key, target, old and new), the files it wrote, and whether it is in place.",
        ),
        "verify": Lazy(
            "tuner.commands.verify:verify",
            "Check live values and managed files against a plan with a generated testinfra suite.",
        ),
        "workloads": Lazy(
            "tuner.commands.workloads:workloads",
            "List the workloads advise and tune take (--workload NAME), one line each.",
        ),
        "sweep": Lazy(
            "tuner.commands.sweep:sweep",
            "Measure direct-read throughput over a grid of request sizes and queue depths.",
        ),
        "bottleneck": Lazy(
            "tuner.commands.bottleneck:bottleneck",
            "Group devices by the components they share and read 1..N of each group at once "
            "(read-only, direct I/O): where the summed throughput stops growing short of the "
            "devices' own sum, that component is the bottleneck. Never writes.",
        ),
        "capture": Lazy(
            "tuner.commands.capture:capture",
            "Record what block devices are asked (kernel tracepoints, a tracefs instance of its "
            "own), as a fingerprint of statistics; write the fio job that reproduces a "
            "fingerprint; check a reproduction by capturing it, side by side with the original.",
        ),
        "report": Lazy(
            "tuner.commands.report:report",
            "Draw the topology (coloured by findings), the findings, and the saved results of "
            "bottleneck (scaling curves), sweep (heatmaps) and tune (convergence, before/after).",
        ),
        "daemon": Lazy(
            "tuner.commands.daemon:daemon",
            "Run in the foreground until SIGTERM: re-apply drifted settings, give new disks of a "
            "known class their plan, watch the workload and (when allowed) re-tune in idle "
            "windows.",
        ),
        "status": Lazy(
            "tuner.commands.status:status",
            "Show the plans in force (from the journal of applies), then the daemon's state, the "
            "plan it holds, drift, the live workload and recent events.",
        ),
        "man": Lazy(
            "tuner.commands.man:man",
            "Show the manual page (as `man iotuner`); piped or with --roff, print its roff source.",
        ),
        "rules": Lazy(
            "tuner.commands.rules:app",
            "List and show the rules iotuner applies. Exit codes: 0 ok, 2 bad input.",
        ),
        "lab": Lazy(
            "tuner.commands.lab:app",
            "Build, inspect and remove an emulated storage lab (loop devices, buses, ceilings) "
            "and network path (namespaces, a rate, a round-trip time). Exit codes: 0 ok, 1 the "
            "lab failed or disagrees with the system, 2 bad input.",
        ),
    }


app = typer.Typer(
    name="iotuner",
    help="Bring a Linux host's real I/O throughput close to what its hardware can deliver.\n\n"
    "Exit codes: 0 ok, 1 failure (or findings with advise --exit-code), 2 bad input. Every "
    "command has --help with examples and --json; `iotuner --install-completion` adds shell "
    "completion, `man iotuner` (or `iotuner man`) is the manual.",
    epilog=examples("iotuner"),
    no_args_is_help=True,
    cls=Commands,
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        from tuner import __version__

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
    from tuner.recovery import before_command

    before_command(ctx.invoked_subcommand, ctx.meta.get(ARGS_KEY, []))


def main() -> None:
    """Console-script entry point: run the app, turning iotuner's errors into one line."""
    try:
        app()
    except IotunerError as err:
        # The terminal's console (rich) is imported when there is something to print: the
        # commands that print import it themselves, `--version` does not need it.
        from tuner.console import print_error

        print_error(err)
        sys.exit(err.exit_code)
    except ModuleNotFoundError as err:
        # A command whose optional part (iotuner[tune], [report], [apply]) is not installed.
        from tuner.console import print_error
        from tuner.extras import missing_extra

        missing = missing_extra(err, _command(sys.argv[1:]))
        if missing is None:
            raise
        print_error(missing)
        sys.exit(missing.exit_code)


def _command(argv: list[str]) -> str | None:
    """The command named on the command line (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


if __name__ == "__main__":
    main()
