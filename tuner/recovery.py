"""Recovery at the start of a command that changes the host: restore what a killed iotuner
left changed. Every other command only says, in one line, what is left and what restores it.

Cheap when there is nothing to do: without a state database no SQLite is opened (nor even
imported), and the state directory is not created.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.state import state_path

if TYPE_CHECKING:
    from tuner.tunables.journal import Recovered

RECOVERING_COMMANDS = frozenset({"tune", "apply", "sweep", "bottleneck", "lab"})
"""Commands that change the host and so first restore what a killed run left (docs/journal.md).
Anything else never writes at start: an administrator runs `probe`, `advise`, `report`,
`history`, `status`, `verify`, `rules` and every `--help` to look, not to change."""

SELF_RECOVERING = frozenset({"rollback", "daemon"})
"""Commands that recover by themselves and report it in their own output (rollback, the
daemon at its start): nothing to do or say before them."""

READ_ONLY_SUBCOMMANDS = frozenset({("lab", "status")})
"""Subcommands of a recovering group that only read."""

HELP_FLAGS = frozenset({"--help", "-h"})


def recovers(command: str | None, args: Sequence[str] = ()) -> bool:
    """Whether `iotuner COMMAND ARGS...` restores a killed run's changes before it starts.

    Only commands that change the host do, and never when asked for --help: help is read.
    """
    if command not in RECOVERING_COMMANDS:
        return False
    if _asks_help(args) or (command == "tune" and _lists_workloads(args)):
        return False
    return not (args and (command, args[0]) in READ_ONLY_SUBCOMMANDS)


def _lists_workloads(args: Sequence[str]) -> bool:
    """`tune --workload list`: it prints the workloads and changes nothing."""
    words = list(itertools.takewhile(lambda word: word != "--", args))
    return "--workload=list" in words or ("--workload", "list") in itertools.pairwise(words)


def _asks_help(args: Sequence[str]) -> bool:
    """--help (or -h) among the words before any `--`."""
    return bool(HELP_FLAGS.intersection(itertools.takewhile(lambda word: word != "--", args)))


def before_command(command: str | None, args: Sequence[str] = ()) -> None:
    """What the CLI does before any command: recover (commands that change the host), nothing
    (commands that recover by themselves), or one line naming what a killed run left."""
    if command in SELF_RECOVERING and not _asks_help(args):
        return
    if recovers(command, args):
        recover_if_needed(command)
    else:
        report_left()


def report_left() -> None:
    """One line on stderr when a killed run left values or an apply open; writes nothing.

    The journal is opened read-only (SQLite `mode=ro`): no schema, no session, no recovery.
    """
    path = journal_path()
    try:
        usable = path.exists() and os.access(path, os.R_OK)
    except OSError:
        usable = False
    if not usable:
        return
    from tuner.state import UntrustedState, trusted_database

    try:
        trusted_database(path)
    except UntrustedState:
        return  # a command that writes says why it will not recover from it
    import sqlite3

    try:
        values, applies = _left_open(path)
    except sqlite3.Error:
        return
    if not values and not applies:
        return
    from tuner.console import print_warning

    print_warning(
        f"a killed iotuner left {values} value(s) and {applies} apply(s) changed; "
        "`iotuner rollback` (or the next `tune`/`apply`) restores them"
    )


def _left_open(path: Path) -> tuple[int, int]:
    """(open changes, pending applies) of sessions whose process is gone, read-only."""
    import sqlite3

    from tuner.tunables.journal import Session, is_alive

    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        sessions = {
            row[0]: Session(*row)
            for row in db.execute(
                "SELECT id, pid, start_time, boot_id, root, command, started, ended FROM sessions"
            )
        }
        dead = {sid for sid, session in sessions.items() if not is_alive(session)}
        changes = db.execute(
            "SELECT session FROM changes WHERE restored_at IS NULL AND kept_at IS NULL"
        ).fetchall()
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        applies = (
            db.execute("SELECT session FROM applies WHERE status = 'pending'").fetchall()
            if "applies" in tables
            else []
        )
    finally:
        db.close()
    # A session missing from the table counts as dead, as recover_pending treats it.
    values = sum(1 for (sid,) in changes if sid in dead or sid not in sessions)
    pending = sum(1 for (sid,) in applies if sid in dead or sid not in sessions)
    return values, pending


def journal_path() -> Path:
    """state.db in the state directory; a command that finds none creates nothing."""
    return state_path() / "state.db"


def recover_if_needed(command: str | None = None) -> list[Recovered]:
    """Restore the open changes of dead sessions, one line per value on stderr.

    Does nothing for the commands in SELF_RECOVERING, without a journal, or when this user may
    not write it (the owner's next command will). A journal that cannot be read, or that is
    not iotuner's own (tuner/state.py), is one line of warning and nothing is restored.
    """
    path = journal_path()
    if command in SELF_RECOVERING:
        return []
    try:
        # exists() raises PermissionError when another user's 0700 state directory is in the way.
        usable = path.exists() and os.access(path, os.R_OK | os.W_OK)
    except OSError:
        usable = False
    if not usable:
        return []
    from tuner.state import UntrustedState, trusted_database

    try:
        trusted_database(path)
    except UntrustedState as err:
        print(f"iotuner: not recovering from the journal: {err}", file=sys.stderr)
        return []
    import sqlite3

    from tuner.apply.changeset import recover_pending
    from tuner.tunables.base import TunableError
    from tuner.tunables.engine import TunableEngine
    from tuner.tunables.journal import Journal, recover

    try:
        with Journal(path) as journal:
            results = recover(lambda root: TunableEngine(root, journal), journal)
            applies = recover_pending(journal)
    except (sqlite3.Error, OSError, TunableError) as err:
        print(f"iotuner: cannot recover from the journal {path}: {err}", file=sys.stderr)
        return []
    for result in results:
        print(f"iotuner: {describe(result)}", file=sys.stderr)
    for line in applies:
        print(f"iotuner: {line}", file=sys.stderr)
    return results


def describe(result: Recovered) -> str:
    """One line about one recovered change."""
    from tuner.tunables.access import format_value

    change = result.change
    what = f"{change.key} on {change.target}"
    if result.outcome == "restored":
        value = format_value(change.saved.original)
        return f"restored {what} to {value} (left by session {change.session})"
    if result.outcome == "reboot":
        return f"dropped {what} from session {change.session}: an earlier boot"
    if result.outcome == "gone":
        return f"dropped {result.message}"
    if result.outcome == "elsewhere":
        return f"left {result.message}"
    return f"could not restore {result.message}; `iotuner rollback` tries again"
