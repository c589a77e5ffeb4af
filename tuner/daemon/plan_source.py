"""Which plan the daemon holds: a named file, or the latest apply the journal has in place.

The daemon asks at every periodic check (an `iotuner apply` or `rollback` behind its back
changes the answer), so the journal is read only when its files changed since the last look:
an idle daemon stats two files. Reads use a read-only SQLite connection, which never writes
the journal (opening a `Journal` would, and would make every look a change).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import BadInput, IotunerError
from tuner.plan import Plan, parse_plan, read_plan
from tuner.process import boot_id, process_start_time
from tuner.state import trusted_database
from tuner.tunables.access import format_value

DAEMON_SOURCE = "daemon"
"""The `source` of the change sets the daemon journals itself (restores, hotplug)."""

IN_FORCE = ("applied", "unchanged")


@dataclass(frozen=True)
class HeldPlan:
    """A plan to hold, where it came from ("file PATH" or "apply #ID") and, for an apply, its
    id and when it finished (epoch seconds: a reboot after it explains a reset value)."""

    plan: Plan
    origin: str
    path: str
    apply_id: int | None = None
    applied_at: float | None = None

    def as_json(self) -> dict[str, Any]:
        """The plan as `iotuner status` shows it."""
        return {
            "origin": self.origin,
            "path": self.path,
            "apply_id": self.apply_id,
            "workload": self.plan.workload,
            "entries": [
                {"key": e.key, "target": e.target, "value": format_value(e.value)}
                for e in self.plan.entries
            ],
        }


@dataclass(frozen=True)
class Latest:
    """The journal's view: the newest apply in force (not the daemon's), and whether an apply
    newer than it is still pending (being written right now)."""

    held: HeldPlan | None
    pending: bool


_looks: dict[tuple[str, str], tuple[object, Any]] = {}
"""(kind, path) -> (stamp of the files when read, what was read): one entry per file."""


def find_plan(journal_path: Path, plan_path: Path | None) -> HeldPlan | None:
    """The plan file if one is named, else the journal's latest apply in force that the
    daemon did not make itself; None when there is none. BadInput for a plan file that cannot
    be read or is not a plan; IotunerError for a journal that cannot be read."""
    if plan_path is not None:
        stamp = _stamp(plan_path)
        cached = _looks.get(("file", str(plan_path)))
        if cached is not None and cached[0] == stamp and stamp is not None:
            held: HeldPlan | None = cached[1]
            return held
        held = HeldPlan(read_plan(plan_path), f"file {plan_path}", str(plan_path))
        _looks[("file", str(plan_path))] = (stamp, held)
        return held
    return latest(journal_path).held


def latest(journal_path: Path) -> Latest:
    """The journal's latest apply in force, read again only when the journal changed."""
    stamp = (_stamp(journal_path), _stamp(journal_path.with_name(journal_path.name + "-wal")))
    cached = _looks.get(("journal", str(journal_path)))
    if cached is not None and cached[0] == stamp:
        found: Latest = cached[1]
        return found
    found = _read_latest(journal_path)
    if not found.pending:  # a pending apply may end (or its process die) without a write
        _looks[("journal", str(journal_path))] = (stamp, found)
    return found


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _read_latest(journal_path: Path) -> Latest:
    if not journal_path.exists():
        return Latest(None, False)
    trusted_database(journal_path)  # the plan held comes from it: UntrustedState otherwise
    try:
        db = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as err:
        raise IotunerError(f"{journal_path}: cannot read the journal ({err})") from None
    try:
        rows = db.execute(
            "SELECT a.id, a.status, a.plan, a.plan_path, a.finished, s.pid, s.start_time,"
            " s.boot_id FROM applies a JOIN sessions s ON s.id = a.session"
            " WHERE a.source IS NULL OR a.source != ? ORDER BY a.id DESC",
            (DAEMON_SOURCE,),
        ).fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return Latest(None, False)  # a journal of tune sessions only: nothing applied
        raise IotunerError(f"{journal_path}: cannot read the journal ({err})") from None
    except sqlite3.Error as err:
        raise IotunerError(f"{journal_path}: cannot read the journal ({err})") from None
    finally:
        db.close()
    pending = False
    for apply_id, status, text, plan_path, finished, pid, start_time, boot in rows:
        if status == "pending":
            # One whose process died is undone by the next iotuner command; only a live one
            # is being written now.
            pending = pending or _alive(pid, start_time, boot)
        elif status in IN_FORCE:
            try:
                plan = parse_plan(text, f"{journal_path}: apply #{apply_id}")
            except BadInput as err:
                raise IotunerError(str(err)) from None
            return Latest(
                HeldPlan(plan, f"apply #{apply_id}", plan_path, apply_id, _epoch(finished)),
                pending,
            )
    return Latest(None, pending)


def _alive(pid: int, start_time: int | None, boot: str | None) -> bool:
    """As Journal.is_alive: the same pid, start time and boot."""
    if boot is not None and boot != boot_id():
        return False
    started = process_start_time(pid)
    return started is not None and started == start_time


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return dt.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None
