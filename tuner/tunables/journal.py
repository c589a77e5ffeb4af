"""The journal: every original value, stored durably before iotuner changes it.

An SQLite database (state_dir()/state.db, docs/journal.md) with two tables. `sessions` has one
row per process that changed something: its pid, its start time from /proc/<pid>/stat and the
boot it ran in (so a reused pid is not mistaken for it), the root it wrote below and its
command line. `changes` has one row per (key, target) changed: the original (with the coupled
values a write may disturb), the new value, and when it was written, restored or kept.

Commits are durable (WAL with synchronous=FULL) before the caller goes on to write the host.
`recover` restores what dead sessions left changed, newest first; `restore_on_signals`
(tuner/tunables/signals.py) makes SIGTERM and Ctrl-C restore before the process exits.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# The signal helpers live beside the journal; callers import them from here.
from tuner.process import boot_id, process_start_time
from tuner.state import state_dir, trusted_database, trusted_parents
from tuner.tunables.access import Saved, as_diskseq, as_netns, as_value
from tuner.tunables.base import OtherNamespace, TargetGone, TunableError, Value
from tuner.tunables.signals import Interrupted, restore_on_signals

__all__ = [
    "Change",
    "Interrupted",
    "Journal",
    "Recovered",
    "Session",
    "recover",
    "restore_on_signals",
]

SCHEMA_VERSION = 3
"""PRAGMA user_version: 1 the first; 2 adds changes.diskseq; 3 adds changes.netns. A journal an
older iotuner wrote is brought up to date when opened (ADDED_COLUMNS); its rows restore as they
did."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pid INTEGER NOT NULL,
    start_time INTEGER,          -- field 22 of /proc/<pid>/stat: clock ticks after boot
    boot_id TEXT,                -- /proc/sys/kernel/random/boot_id
    root TEXT NOT NULL,          -- the root the values were written below ("/" live)
    command TEXT NOT NULL,
    started TEXT NOT NULL,
    ended TEXT
);
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session INTEGER NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,        -- order within the session
    key TEXT NOT NULL,
    target TEXT NOT NULL,
    original TEXT NOT NULL,      -- JSON
    coupled TEXT NOT NULL,       -- JSON object: other keys a write of this one may change
    new TEXT,                    -- JSON: what was asked, then what the kernel read back
    written_at TEXT,             -- NULL: journaled, the write not (yet) made
    restored_at TEXT,
    kept_at TEXT,                -- left in place on purpose (apply); recovery skips it
    outcome TEXT,                -- restored, reboot, gone, kept
    diskseq INTEGER,             -- the block device's attachment (NULL: none, or schema 1)
    netns INTEGER,               -- the network namespace's id (NULL: not per namespace, or < 3)
    UNIQUE (session, seq)
);
CREATE INDEX IF NOT EXISTS changes_open ON changes (restored_at, kept_at);
"""
ADDED_COLUMNS: dict[str, str] = {"diskseq": "INTEGER", "netns": "INTEGER"}
"""Columns of `changes` added since schema 1, with their types: a journal written before gets
them when opened, NULL in its old rows (which restore by name, as before)."""


@dataclass(frozen=True)
class Session:
    """One process that changed values."""

    id: int
    pid: int
    start_time: int | None
    boot_id: str | None
    root: str
    command: str
    started: str
    ended: str | None


@dataclass(frozen=True)
class Change:
    """One journaled change of one key on one target."""

    id: int
    session: int
    seq: int
    key: str
    target: str
    saved: Saved
    new: Value | None
    written_at: str | None
    restored_at: str | None
    kept_at: str | None
    outcome: str | None


def now() -> str:
    """The current time, UTC, ISO 8601 to the microsecond."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def default_path() -> Path:
    """state_dir()/state.db."""
    return state_dir() / "state.db"


class Journal:
    """The state database. One connection per Journal; safe to share the file across processes."""

    def __init__(self, path: Path | None = None, *, command: str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.command = command if command is not None else " ".join(sys.argv)
        # What recovery writes back as root comes from this file: it must be iotuner's own.
        trusted_parents(self.path.parent)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        trusted_database(self.path)
        with contextlib.suppress(FileExistsError):
            # Born 0600: originals of host settings are nobody else's business.
            os.close(
                os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            )
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        # FULL: each commit is on disk before it returns, so a journaled original survives a
        # power cut between the journal entry and the write it protects.
        self.db.execute("PRAGMA synchronous=FULL")
        # Every statement is IF NOT EXISTS: several processes may open a new database at once.
        self.db.executescript(_SCHEMA)
        self.add_columns("changes", ADDED_COLUMNS)
        # Never lowered: a newer iotuner's journal keeps its number (and its columns).
        if self.db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._sessions: dict[str, int] = {}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT: one durable commit, rolled back on any exception."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def add_columns(self, table: str, columns: dict[str, str]) -> None:
        """Add those of `columns` (name: type) that `table` lacks, as a journal an older
        iotuner wrote does; checked again inside the transaction, so two processes opening
        it at once add each column once."""
        if not self._lacking(table, columns):
            return
        with self.transaction():
            for name in self._lacking(table, columns):
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {columns[name]}")

    def _lacking(self, table: str, columns: dict[str, str]) -> list[str]:
        have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
        return [name for name in columns if name not in have]

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    def session(self, root: Path | str, *, pid: int | None = None) -> int:
        """This process's session for `root` (or that of `pid`, the process whose life the
        changes belong to), created on first use."""
        pid = os.getpid() if pid is None else pid
        key = f"{root}\0{pid}"
        if key not in self._sessions:
            with self.transaction():
                cursor = self.db.execute(
                    "INSERT INTO sessions (pid, start_time, boot_id, root, command, started)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        pid,
                        process_start_time(pid),
                        boot_id(),
                        str(root),
                        self.command,
                        now(),
                    ),
                )
            self._sessions[key] = int(cursor.lastrowid or 0)
        return self._sessions[key]

    def record(self, session: int, entries: Sequence[tuple[str, str, Saved, Value]]) -> list[int]:
        """Journal (key, target, saved original, new value) entries in one durable commit,
        before any of them is written; returns their change ids in order."""
        ids: list[int] = []
        with self.transaction():
            row = self.db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM changes WHERE session = ?", (session,)
            ).fetchone()
            for seq, (key, target, saved, new) in enumerate(entries, start=int(row[0]) + 1):
                cursor = self.db.execute(
                    "INSERT INTO changes (session, seq, key, target, original, coupled, new,"
                    " diskseq, netns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session,
                        seq,
                        key,
                        target,
                        _dump(saved.original),
                        json.dumps(saved.coupled),
                        _dump(new),
                        saved.diskseq,
                        saved.netns,
                    ),
                )
                ids.append(int(cursor.lastrowid or 0))
        return ids

    def written(self, change: int, new: Value) -> None:
        """The value is written; `new` is what the kernel reads back."""
        with self.transaction():
            self.db.execute(
                "UPDATE changes SET written_at = ?, new = ? WHERE id = ?",
                (now(), _dump(new), change),
            )

    def restored(self, change: int, outcome: str = "restored") -> None:
        """The original is back (or, with outcome "reboot" or "gone", no longer applies)."""
        with self.transaction():
            self.db.execute(
                "UPDATE changes SET restored_at = ?, outcome = ? WHERE id = ?",
                (now(), outcome, change),
            )

    def keep(self, changes: Sequence[int]) -> None:
        """Leave these changes in place on purpose: recovery and plain rollback skip them."""
        with self.transaction():
            stamp = now()
            self.db.executemany(
                "UPDATE changes SET kept_at = ?, outcome = 'kept' WHERE id = ?",
                [(stamp, change) for change in changes],
            )

    def end(self, session: int) -> None:
        """The session's process finished normally."""
        with self.transaction():
            self.db.execute("UPDATE sessions SET ended = ? WHERE id = ?", (now(), session))

    # -- reading ---------------------------------------------------------------------------

    def sessions(self) -> list[Session]:
        """Every session, oldest first."""
        rows = self.db.execute(
            "SELECT id, pid, start_time, boot_id, root, command, started, ended FROM sessions"
            " ORDER BY id"
        ).fetchall()
        return [Session(*row) for row in rows]

    def open_changes(self, sessions: Sequence[int] | None = None) -> list[Change]:
        """Changes neither restored nor kept, newest first (the order to undo them in)."""
        sql = (
            "SELECT id, session, seq, key, target, original, coupled, new, written_at,"
            " restored_at, kept_at, outcome, diskseq, netns FROM changes"
            " WHERE restored_at IS NULL AND kept_at IS NULL"
        )
        rows = self.db.execute(sql + " ORDER BY id DESC").fetchall()
        wanted = None if sessions is None else set(sessions)
        return [_change(row) for row in rows if wanted is None or row[1] in wanted]

    def changes(self, session: int) -> list[Change]:
        """Every change of one session, in the order they were journaled."""
        rows = self.db.execute(
            "SELECT id, session, seq, key, target, original, coupled, new, written_at,"
            " restored_at, kept_at, outcome, diskseq, netns FROM changes WHERE session = ?"
            " ORDER BY seq",
            (session,),
        ).fetchall()
        return [_change(row) for row in rows]

    def is_alive(self, session: Session) -> bool:
        """True while the session's own process runs (same pid, start time and boot)."""
        return is_alive(session)


def is_alive(session: Session) -> bool:
    """True while the session's own process runs (same pid, start time and boot)."""
    if session.boot_id is not None and session.boot_id != boot_id():
        return False
    started = process_start_time(session.pid)
    return started is not None and started == session.start_time


def _dump(value: Value | None) -> str:
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def _change(row: tuple[Any, ...]) -> Change:
    coupled = {key: as_value(value) for key, value in json.loads(row[6]).items()}
    new = json.loads(row[7]) if row[7] is not None else None
    return Change(
        id=row[0],
        session=row[1],
        seq=row[2],
        key=row[3],
        target=row[4],
        saved=Saved(as_value(json.loads(row[5])), coupled, as_diskseq(row[12]), as_netns(row[13])),
        new=None if new is None else as_value(new),
        written_at=row[8],
        restored_at=row[9],
        kept_at=row[10],
        outcome=row[11],
    )


class ChangeRestorer(Protocol):
    """What recovery needs of an engine: put one journaled original back."""

    def restore_change(self, change: Change) -> None:
        """Write the change's original; TunableError when that fails."""


@dataclass(frozen=True)
class Recovered:
    """What became of one change during recovery: restored, reboot, gone, elsewhere (left
    open for a rollback from the network namespace it was made in) or failed."""

    change: Change
    outcome: str
    message: str = ""


def _recover_one(engine: ChangeRestorer, journal: Journal, change: Change) -> Recovered:
    """Put back one change and journal how it went ("failed" is not journaled: the change
    stays open for another try)."""
    try:
        engine.restore_change(change)
    except TargetGone as err:
        journal.restored(change.id, "gone")
        return Recovered(change, "gone", str(err))
    except OtherNamespace as err:
        return Recovered(change, "elsewhere", str(err))
    except TunableError as err:
        return Recovered(change, "failed", str(err))
    journal.restored(change.id)
    return Recovered(change, "restored")


def recover(
    engine_factory: Callable[[Path], ChangeRestorer],
    journal: Journal | None = None,
    *,
    include_live: bool = False,
) -> list[Recovered]:
    """Restore every open change of sessions whose process is gone, newest first.

    `engine_factory(root)` gives what writes below that session's root. Changes of an earlier
    boot are closed without writing (runtime values do not survive a reboot, and device names
    may now mean other devices); a target or root that no longer exists is closed as "gone",
    and so is a block device whose name another device has taken since (its diskseq differs:
    nothing is written onto it), or a namespace made again under a journaled NAME; a
    per-namespace "host" value saved in another namespace than this process's is left open
    ("elsewhere") for a rollback run there; any other failure is reported and left open for the next
    try. `include_live` also takes the sessions of running processes (`iotuner rollback
    --all`), never this process's own.
    """
    own = journal is None
    journal = journal if journal is not None else Journal()
    try:
        sessions = {s.id: s for s in journal.sessions()}
        this_boot = boot_id()
        engines: dict[str, ChangeRestorer] = {}
        results: list[Recovered] = []
        refused: list[Change] = []
        for change in journal.open_changes():
            session = sessions[change.session]
            if session.pid == os.getpid() and journal.is_alive(session):
                continue
            if not include_live and journal.is_alive(session):
                continue
            if None not in (session.boot_id, this_boot) and session.boot_id != this_boot:
                journal.restored(change.id, "reboot")
                results.append(Recovered(change, "reboot", "from an earlier boot"))
                continue
            if not Path(session.root).is_dir():
                journal.restored(change.id, "gone")
                results.append(Recovered(change, "gone", f"the root {session.root} is gone"))
                continue
            if session.root not in engines:
                engines[session.root] = engine_factory(Path(session.root))
            done = _recover_one(engines[session.root], journal, change)
            if done.outcome == "failed":
                refused.append(change)
            else:
                results.append(done)
        # A value the kernel refuses may be accepted once a later change is back (a depth
        # only the scheduler that allowed it takes): one more try each, as the engine's own
        # restore does, before it is a failure.
        for change in refused:
            results.append(_recover_one(engines[sessions[change.session].root], journal, change))
        return results
    finally:
        if own:
            journal.close()
