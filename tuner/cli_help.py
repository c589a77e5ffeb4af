"""How `iotuner --help` reads: examples under every command, usage as man pages write it.

Typer's rich help prints a flag's type (`--json <bool>`) as if the flag took a value, and a
required argument in braces (`verify [OPTIONS] {plan}`); the command and group classes here
print flags bare and arguments as `PLAN`. Examples live here, one table for every command, so
`--help`, the man page and the docs show the same ones.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main
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
        "iotuner apply plan.yaml --measure --target /dev/sdb --destroy-data /dev/sdb",
        "iotuner apply net.yaml   # added to the plans in force (iotuner status lists them)",
        "iotuner apply --replace plan.yaml   # this plan alone",
    ),
    "rollback": ("iotuner rollback", "iotuner rollback --to 0", "iotuner rollback --json"),
    "history": ("iotuner history", "iotuner history --json"),
    "verify": ("iotuner verify plan.yaml", "iotuner verify plan.yaml --keep /tmp/suite"),
    "workloads": ("iotuner workloads", "iotuner workloads --json", "iotuner tune --workload list"),
    "man": ("iotuner man", "iotuner man --roff > iotuner.1"),
    "sweep": ("iotuner sweep /dev/sdb", "iotuner sweep /dev/sdb --json"),
    "capture": (
        "iotuner capture --device /dev/sdb --seconds 60 --out db.fingerprint.json",
        "iotuner capture --reproduce db.fingerprint.json --out db.fio",
        "iotuner capture --check db.fio --device /dev/sdc --against db.fingerprint.json",
        "iotuner tune --capture db.fingerprint.json --target /data",
        "iotuner capture --replay-trace db.trace --device /dev/sdc --against db.fingerprint.json"
        " --destroy-data",
    ),
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


@dataclass(frozen=True)
class Lazy:
    """A command imported when it runs: "module:attribute" (a function or a typer app).

    `summary` is what the command list shows, the first paragraph of the command's own help
    (tests/commands/test_help.py holds them equal), so `iotuner --help` imports no command.
    """

    target: str
    summary: str


class LazyGroup(Group):
    """A group whose commands are imported on first use, not when the program starts.

    Every `iotuner` call paid for importing all commands (the rule engine, the trials, the lab)
    before running one. Running, completing options of, or asking help of one command imports
    that command only; listing the commands (the root's help, completing a command's name)
    shows the summaries. `commands` still holds every command, loaded then, for the man page.
    """

    lazy: ClassVar[dict[str, Lazy]] = {}
    """The commands in the order the help lists them; set by the subclass (tuner/cli.py)."""

    def __init__(self, **attrs: Any) -> None:
        self._loaded: dict[str, Any] = {}
        self._listing = False
        super().__init__(**attrs)

    @property  # type: ignore[override]
    def commands(self) -> dict[str, Any]:
        """Every command, each imported now if it was not yet, in the table's order."""
        for name in self.lazy:
            self._load(name)
        # In the help's order whichever command ran first (`iotuner man` lists itself in its
        # place, not first); in place, as click's add_command writes into this dict.
        ordered = {name: self._loaded[name] for name in self.list_commands(None)}
        self._loaded.clear()
        self._loaded.update(ordered)
        return self._loaded

    @commands.setter
    def commands(self, value: Any) -> None:
        self._loaded = dict(value)

    def list_commands(self, ctx: Any) -> list[str]:
        """The names, in the table's order, without importing a command."""
        return [*self.lazy, *(name for name in self._loaded if name not in self.lazy)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command, imported now; while listing, a stand-in showing its summary."""
        entry = self.lazy.get(cmd_name)
        if entry is not None and self._listing and cmd_name not in self._loaded:
            return TyperCommand(name=cmd_name, help=entry.summary)
        if entry is not None:
            return self._load(cmd_name)
        return self._loaded.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The help, its command list from the summaries."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        """Command names (with their summaries) and options, importing no command."""
        self._listing = True
        try:
            return list(super().shell_complete(ctx, incomplete))
        finally:
            self._listing = False

    def _load(self, name: str) -> Any:
        if name in self._loaded:
            return self._loaded[name]
        module, attribute = self.lazy[name].target.split(":")
        target = getattr(importlib.import_module(module), attribute)
        # Built as typer builds a registered command or sub-app (get_group_from_info), with
        # the root's settings (pretty_exceptions_short: typer's default, which the root keeps).
        holder = typer.Typer()
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=name)
            command: Any = typer.main.get_group_from_info(
                holder.registered_groups[0],
                pretty_exceptions_short=True,
                suggest_commands=self.suggest_commands,
                rich_markup_mode=self.rich_markup_mode,
            )
        else:
            add_command(holder, name, target)
            command = typer.main.get_command_from_info(
                holder.registered_commands[0],
                pretty_exceptions_short=True,
                rich_markup_mode=self.rich_markup_mode,
            )
        self._loaded[name] = command
        return command
