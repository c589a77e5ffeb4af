"""Recovery at the start of every command: restore what a killed iotuner left changed.

Cheap when there is nothing to do: without a state database no SQLite is opened (nor even
imported), and the state directory is not created.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.state import state_path

if TYPE_CHECKING:
    from tuner.tunables.journal import Recovered

SKIP_COMMANDS = frozenset({"rollback", "daemon", "status"})
"""Commands that recover by themselves and report it in their own output (rollback, the
daemon at its start), or that only read (status talks to the daemon, never to the journal)."""


def journal_path() -> Path:
    """state.db in the state directory; a command that finds none creates nothing."""
    return state_path() / "state.db"


def recover_if_needed(command: str | None = None) -> list[Recovered]:
    """Restore the open changes of dead sessions, one line per value on stderr.

    Does nothing for the commands in SKIP_COMMANDS, without a journal, or when this user may
    not write it (the owner's next command will). A journal that cannot be read, or that is
    not iotuner's own (tuner/state.py), is one line of warning and nothing is restored.
    """
    path = journal_path()
    if command in SKIP_COMMANDS:
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
