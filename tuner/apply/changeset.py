"""The journal of applies: what every managed file and live value held before a plan went on.

Each apply is a change set in the state database (docs/apply.md): its plan, the process it
belongs to, every managed file's bytes, mode and owner (or that it did not exist) and every live
value's original, all in one durable commit before anything is written. `undo` puts a set back:
files byte for byte, links, and live values newest first. A set still "pending" when its
process is gone (kill -9, power cut) is undone by the next iotuner command.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.apply.render import MANAGED_FILES, Rendered
from tuner.errors import BadInput
from tuner.outfile import write_file
from tuner.tunables.access import Saved, Tunables, as_diskseq, as_netns, as_value
from tuner.tunables.base import Value
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal, now

STATUSES = ("pending", "applied", "unchanged", "failed", "rolled-back")
"""pending: journaled, being applied; unchanged: applied and nothing needed changing."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS applies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session INTEGER NOT NULL REFERENCES sessions(id),  -- the owning process, for liveness
    plan TEXT NOT NULL,          -- the plan file's text as applied
    plan_path TEXT NOT NULL,
    host TEXT, source TEXT, workload TEXT,
    entries INTEGER NOT NULL,
    root TEXT NOT NULL,
    status TEXT NOT NULL,
    created TEXT NOT NULL,
    finished TEXT,
    rolled_back_at TEXT
);
CREATE TABLE IF NOT EXISTS apply_files (
    apply INTEGER NOT NULL REFERENCES applies(id),
    seq INTEGER NOT NULL,
    path TEXT NOT NULL,
    existed INTEGER NOT NULL,
    content BLOB,                -- the bytes before, for a regular file
    mode INTEGER, uid INTEGER, gid INTEGER,
    link TEXT,                   -- the target before, for a symlink
    wanted INTEGER NOT NULL,     -- whether the plan wants the file to exist
    PRIMARY KEY (apply, seq)
);
CREATE TABLE IF NOT EXISTS apply_values (
    apply INTEGER NOT NULL REFERENCES applies(id),
    seq INTEGER NOT NULL,
    key TEXT NOT NULL,
    target TEXT NOT NULL,
    original TEXT NOT NULL,      -- JSON
    coupled TEXT NOT NULL,       -- JSON object
    new TEXT NOT NULL,           -- JSON: what the plan sets
    diskseq INTEGER,             -- the block device's attachment (NULL: none, or older)
    netns INTEGER,               -- the network namespace's id (NULL: not per namespace, or older)
    PRIMARY KEY (apply, seq)
);
"""
VALUE_COLUMNS_ADDED: dict[str, str] = {"diskseq": "INTEGER", "netns": "INTEGER"}
"""Columns of `apply_values` added since its first form: a journal without them gets them."""
APPLY_COLUMNS_ADDED: dict[str, str] = {"own_plan": "TEXT", "members": "TEXT"}
"""Columns of `applies` added for plans that compose (tuner/apply/compose.py): the plan file
the set was given (`plan` is the union it applied) and the earlier sets it still holds (JSON)."""

OWNER_COMMANDS = frozenset({"iotuner", "ansible-playbook"})


@dataclass(frozen=True)
class ApplyRecord:
    """One apply as `iotuner history` shows it."""

    id: int
    created: str
    finished: str | None
    status: str
    host: str | None
    source: str | None
    workload: str | None
    plan_path: str
    entries: int
    files: tuple[str, ...]
    rolled_back_at: str | None
    pid: int


@dataclass(frozen=True)
class SavedFile:
    """A managed path as it was before an apply."""

    path: str
    existed: bool
    content: bytes | None
    mode: int | None
    uid: int | None
    gid: int | None
    link: str | None


def _ensure(journal: Journal) -> None:
    journal.db.executescript(_SCHEMA)
    journal.add_columns("apply_values", VALUE_COLUMNS_ADDED)
    journal.add_columns("applies", APPLY_COLUMNS_ADDED)


def find_owner() -> int:
    """The outermost `iotuner` or `ansible-playbook` process above this one (or this one):
    a module process ends with its task, the apply it is part of lives as long as that."""
    import psutil

    found = os.getpid()
    with contextlib.suppress(psutil.Error):
        for proc in psutil.Process().parents():
            if proc.pid == 1:
                break
            with contextlib.suppress(psutil.Error):
                if any(Path(arg).name in OWNER_COMMANDS for arg in proc.cmdline()[:2]):
                    found = proc.pid
    return found


def save_file(path: str) -> SavedFile:
    """A path's current state: its bytes, mode and owner, its link target, or its absence."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return SavedFile(path, False, None, None, None, None, None)
    if Path(path).is_symlink():
        return SavedFile(path, True, None, None, info.st_uid, info.st_gid, os.readlink(path))
    content = Path(path).read_bytes()
    return SavedFile(path, True, content, info.st_mode & 0o7777, info.st_uid, info.st_gid, None)


def begin(
    journal: Journal,
    rendered: Rendered,
    *,
    plan_text: str,
    plan_path: str,
    root: Path = Path("/"),
    owner_pid: int | None = None,
    own_plan: str | None = None,
    members: Sequence[int] = (),
) -> int:
    """Journal every managed file and live value as it is now, in one durable commit;
    returns the change set's id. Nothing is written to the host. `plan_text` is what is
    rendered (the union of the plans in force), `own_plan` the plan file given, `members` the
    earlier change sets whose plans it still holds (tuner/apply/compose.py)."""
    _ensure(journal)
    pid = owner_pid if owner_pid is not None else find_owner()
    session = journal.session(root, pid=pid)
    files = [save_file(f.path) for f in rendered.files]
    tunables = Tunables(root)
    originals = [tunables.save(s.key, s.target) for s in rendered.live]
    plan = rendered.plan
    with journal.transaction():
        cursor = journal.db.execute(
            "INSERT INTO applies (session, plan, plan_path, host, source, workload, entries,"
            " root, status, created, own_plan, members)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
            (session, plan_text, plan_path, plan.host, plan.source, plan.workload,
             len(plan.entries), str(root), now(), own_plan, json.dumps(list(members))),
        )  # fmt: skip
        apply_id = int(cursor.lastrowid or 0)
        for seq, (saved, managed) in enumerate(zip(files, rendered.files, strict=True)):
            journal.db.execute(
                "INSERT INTO apply_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (apply_id, seq, saved.path, saved.existed, saved.content, saved.mode,
                 saved.uid, saved.gid, saved.link, managed.wanted),
            )  # fmt: skip
        for seq, (setting, original) in enumerate(zip(rendered.live, originals, strict=True)):
            journal.db.execute(
                "INSERT INTO apply_values (apply, seq, key, target, original, coupled, new,"
                " diskseq, netns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (apply_id, seq, setting.key, setting.target, _dump(original.original),
                 json.dumps({k: _plain(v) for k, v in original.coupled.items()}),
                 _dump(setting.value), original.diskseq, original.netns),
            )  # fmt: skip
    return apply_id


def finish(journal: Journal, apply_id: int, status: str) -> None:
    """Mark a change set applied, unchanged or failed."""
    if status not in ("applied", "unchanged", "failed"):
        raise ValueError(f"not a final status: {status!r}")
    _ensure(journal)
    with journal.transaction():
        journal.db.execute(
            "UPDATE applies SET status = ?, finished = ? WHERE id = ?", (status, now(), apply_id)
        )
    if status != "failed":
        session = _session_of(journal, apply_id)
        if session is not None:
            journal.end(session)


def undo(journal: Journal, apply_id: int) -> list[str]:
    """Put back what a change set found: files byte for byte (or removed), then live values
    newest first. Returns one line per problem; the set is marked rolled back either way."""
    _ensure(journal)
    row = journal.db.execute("SELECT root FROM applies WHERE id = ?", (apply_id,)).fetchone()
    if row is None:
        return [f"no apply {apply_id} in {journal.path}"]
    problems = []
    rules_touched = False
    for saved in reversed(_saved_files(journal, apply_id)):
        try:
            if restore_file(saved):
                rules_touched |= saved.path.endswith(".rules")
        except OSError as err:
            problems.append(f"{saved.path}: {err.strerror or err}")
    # One value at a time, newest first, failed where the kernel ties one attribute to
    # another: a plan's scheduler none with its depth of 22 is undone depth first, and 256
    # is refused until mq-deadline is back (the claims benchmark's hdd-streams-12, 2026-11-28).
    problems += TunableEngine(Path(row[0])).restore_all_saved(_saved_values(journal, apply_id))
    if rules_touched:
        reload_udev()
    with journal.transaction():
        stamp = now()
        journal.db.execute(
            "UPDATE applies SET status = 'rolled-back', rolled_back_at = ? WHERE id = ?",
            (stamp, apply_id),
        )
        # A later set that changed nothing stood on this one (its plans in force included
        # this one's): it holds nothing once this is undone.
        journal.db.execute(
            "UPDATE applies SET status = 'rolled-back', rolled_back_at = ?"
            " WHERE id > ? AND status = 'unchanged'",
            (stamp, apply_id),
        )
    session = _session_of(journal, apply_id)
    if session is not None:
        journal.end(session)
    return problems


def restore_file(saved: SavedFile) -> bool:
    """Make a path what it was; True when something had to change. Only the files apply
    manages (MANAGED_FILES below some root): PermissionError for any other path a journal
    names."""
    if not any(saved.path.endswith(f"/{rel}") for rel in MANAGED_FILES):
        raise PermissionError(1, "not a file iotuner apply manages", saved.path)
    if saved == save_file(saved.path):
        return False
    path = Path(saved.path)
    if not saved.existed:
        if path.is_symlink() or path.is_file():
            path.unlink()
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    if saved.link is not None:
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(saved.link)
        return True
    if path.is_dir() and not path.is_symlink():
        raise IsADirectoryError(21, "a directory is in the way", str(path))
    # Written beside it through a random O_EXCL temporary and renamed over it (tuner.outfile):
    # a crash leaves the old file or the restored one, and nothing planted beside it is followed.
    owner = (
        (saved.uid, saved.gid)
        if saved.uid is not None and saved.gid is not None and os.geteuid() == 0
        else None
    )
    mode = 0o644 if saved.mode is None else saved.mode
    try:
        write_file(path, saved.content or b"", mode=mode, what="restored file", owner=owner)
    except BadInput as err:
        raise OSError(errno.EIO, str(err).removeprefix(f"{path}: "), str(path)) from None
    return True


def reload_udev() -> None:
    """Tell a running udevd to re-read its rules (nothing to do when none runs)."""
    if Path("/run/udev/control").exists() and shutil.which("udevadm"):
        subprocess.run(["udevadm", "control", "--reload"], capture_output=True, check=False)


def history(journal: Journal) -> list[ApplyRecord]:
    """Every apply, newest first."""
    _ensure(journal)
    rows = journal.db.execute(
        "SELECT a.id, a.created, a.finished, a.status, a.host, a.source, a.workload,"
        " a.plan_path, a.entries, a.rolled_back_at, s.pid FROM applies a"
        " JOIN sessions s ON s.id = a.session ORDER BY a.id DESC"
    ).fetchall()
    records = []
    for row in rows:
        files = tuple(
            r[0]
            for r in journal.db.execute(
                "SELECT path FROM apply_files WHERE apply = ? AND wanted ORDER BY seq", (row[0],)
            )
        )
        id_, created, finished, status, host, source, workload, plan_path, entries = row[:9]
        records.append(
            ApplyRecord(
                id_,
                created,
                finished,
                status,
                host,
                source,
                workload,
                plan_path,
                entries,
                files,
                row[9],
                row[10],
            )
        )
    return records


def plan_text(journal: Journal, apply_id: int) -> str | None:
    """The plan an apply used, as it was."""
    _ensure(journal)
    row = journal.db.execute("SELECT plan FROM applies WHERE id = ?", (apply_id,)).fetchone()
    return None if row is None else str(row[0])


def recover_pending(journal: Journal) -> list[str]:
    """Undo every pending apply whose process is gone; one line per set undone or problem."""
    _ensure(journal)
    sessions = {s.id: s for s in journal.sessions()}
    lines = []
    for apply_id, session in journal.db.execute(
        "SELECT id, session FROM applies WHERE status = 'pending' ORDER BY id DESC"
    ).fetchall():
        if session in sessions and journal.is_alive(sessions[session]):
            continue
        problems = undo(journal, apply_id)
        lines.append(f"rolled back apply {apply_id}, interrupted before it finished")
        lines.extend(f"apply {apply_id}: {p}" for p in problems)
    return lines


def _session_of(journal: Journal, apply_id: int) -> int | None:
    row = journal.db.execute("SELECT session FROM applies WHERE id = ?", (apply_id,)).fetchone()
    return None if row is None else int(row[0])


def _saved_files(journal: Journal, apply_id: int) -> list[SavedFile]:
    rows = journal.db.execute(
        "SELECT path, existed, content, mode, uid, gid, link FROM apply_files"
        " WHERE apply = ? ORDER BY seq",
        (apply_id,),
    ).fetchall()
    return [SavedFile(r[0], bool(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]


def _saved_values(journal: Journal, apply_id: int) -> list[tuple[str, str, Saved]]:
    rows = journal.db.execute(
        "SELECT key, target, original, coupled, diskseq, netns FROM apply_values WHERE apply = ?"
        " ORDER BY seq",
        (apply_id,),
    ).fetchall()
    return [
        (r[0], r[1], Saved(as_value(json.loads(r[2])),
                           {k: as_value(v) for k, v in json.loads(r[3]).items()},
                           as_diskseq(r[4]), as_netns(r[5])))
        for r in rows
    ]  # fmt: skip


def _plain(value: Value) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _dump(value: Value) -> str:
    return json.dumps(_plain(value))
