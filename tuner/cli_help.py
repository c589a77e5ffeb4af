"""How `iotuner --help` reads: examples under every command, usage as man pages write it.

Typer's rich help prints a flag's type (`--json <bool>`) as if the flag took a value, and a
required argument in braces (`verify [OPTIONS] {plan}`); the command and group classes here
print flags bare and arguments as `PLAN`. Examples live here, one table for every command, so
`--help`, the man page and the docs show the same ones.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

EXAMPLES: dict[str, tuple[str, ...]] = {
    "iotuner": (
        "iotuner probe",
        "iotuner advise --workload stream-write",
        "iotuner tune --plan-out plan.yaml && iotuner apply plan.yaml --check --diff",
    ),
    "probe": (
        "iotuner probe",
        "iotuner probe --section storage",
        "iotuner probe --json > host.json",
        "iotuner probe --gather host.tar.xz && iotuner probe --root host.tar.xz",
    ),
    "advise": (
        "iotuner advise --workload stream-write",
        "iotuner advise --workload disk-to-network --link-gbps 10 --rtt-ms 100",
        "iotuner advise --workload disk-to-network --peer dtn2.example.org   # runs iperf3 -s",
        "iotuner advise --explain",
        "iotuner advise --plan-out plan.yaml && iotuner apply plan.yaml",
        "iotuner advise --exit-code   # 1 when there is a warning or critical finding",
    ),
    "tune": (
        "iotuner tune",
        "iotuner tune --target /data --workload stream-write",
        "iotuner tune --target /dev/sdb --destroy-data /dev/sdb --workload stream-write",
        "iotuner tune --fio-job db.fio --cache-memory 8G   # a database reading its own file",
        "iotuner tune --workload disk-to-network   # both ends of the network lab's path",
        "iotuner tune --workload disk-to-network --peer dtn2   # this host sending to dtn2",
        "iotuner tune --json --plan-out plan.yaml",
    ),
    "apply": (
        "iotuner apply plan.yaml --check --diff",
        "iotuner apply plan.yaml",
        "iotuner apply plan.yaml --measure",
    ),
    "rollback": ("iotuner rollback", "iotuner rollback --to 0", "iotuner rollback --json"),
    "history": ("iotuner history", "iotuner history --json"),
    "verify": ("iotuner verify plan.yaml", "iotuner verify plan.yaml --keep /tmp/suite"),
    "sweep": ("iotuner sweep /dev/sdb", "iotuner sweep /dev/sdb --json"),
    "bottleneck": ("iotuner bottleneck", "iotuner bottleneck --json"),
    "report": (
        "iotuner report --out report.html",
        "iotuner report --root host.tar.xz --out other-host.html",
    ),
    "daemon": (
        "iotuner daemon --config /etc/iotuner/iotuner.toml",
        "iotuner daemon --check-config --json",
    ),
    "status": ("iotuner status", "iotuner status --json --events 50"),
    "rules": ("iotuner rules list", "iotuner rules show readahead-small-for-streaming"),
    "list": ("iotuner rules list", "iotuner rules list --markdown > docs/rules.md"),
    "show": ("iotuner rules show readahead-small-for-streaming", "iotuner rules show ID --json"),
    "lab": ("iotuner lab up three-disks-one-bus", "iotuner lab status", "iotuner lab down"),
    "up": ("iotuner lab up single-disk", "iotuner lab up my-spec.yaml --json"),
    "down": ("iotuner lab down", "iotuner lab down --json"),
    "lab status": ("iotuner lab status", "iotuner lab status --json"),
}


def examples(name: str) -> str:
    """The epilog of command `name`: its examples as a Markdown code block."""
    lines = EXAMPLES.get(name, ())
    if not lines:
        return ""
    return "**Examples**\n\n```\n" + "\n".join(lines) + "\n```"


def _tidy(params: list[Any]) -> list[Any]:
    for param in params:
        # A flag takes no value: no type column for it (typer prints '<bool>' otherwise).
        if getattr(param, "is_flag", False) and not getattr(param, "count", False):
            param.metavar = ""
    return params


ARGS_KEY = "iotuner.args"
"""ctx.meta key of the words after the command name (`iotuner COMMAND ARGS...`)."""


class Command(TyperCommand):
    """A typer command whose help shows flags bare and arguments in capitals."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, flags without a type to show."""
        return _tidy(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """'[OPTIONS] PLAN', as man pages and click write it ('{plan}' in typer's)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                continue
            name = str(param.metavar or param.name or "").upper()
            name += "..." if param.nargs != 1 else ""
            pieces.append(name if param.required else f"[{name}]")
        return pieces


class Group(TyperGroup):
    """A typer group whose help shows flags bare."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, flags without a type to show."""
        return _tidy(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse as click does, keeping the words after the group's options in ctx.meta
        (ARGS_KEY): click empties ctx.args before the group's callback runs, and the callback
        decides by them whether a command only reads (`lab status`, `--help`)."""
        rest: list[str] = super().parse_args(ctx, args)
        ctx.meta[ARGS_KEY] = list(rest)
        return rest


def add_command(app: typer.Typer, name: str, function: Any, key: str | None = None) -> None:
    """Register `function` as command `name` with the examples under `key` (default: name)."""
    app.command(name=name, cls=Command, epilog=examples(key or name))(function)
