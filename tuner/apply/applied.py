"""What one apply changed, value by value and file by file, read from the journal and never
written: for `iotuner history` and `iotuner rollback --check`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tuner.apply.changeset import history
from tuner.tunables.journal import Journal


@dataclass(frozen=True)
class ValueChange:
    """One live value an apply set: the key, its target, what it was and what the plan set."""

    key: str
    target: str
    old: Any
    new: Any


@dataclass(frozen=True)
class FileChange:
    """One managed file an apply wrote: whether it existed before (rollback restores its bytes)
    or not (rollback removes it)."""

    path: str
    existed: bool


def applied_values(journal: Journal, apply_id: int) -> list[ValueChange]:
    """The values apply `apply_id` set, in the order it set them."""
    history(journal)  # the apply tables exist in a journal no apply has touched yet
    rows = journal.db.execute(
        "SELECT key, target, original, new FROM apply_values WHERE apply = ? ORDER BY seq",
        (apply_id,),
    ).fetchall()
    return [ValueChange(r[0], r[1], json.loads(r[2]), json.loads(r[3])) for r in rows]


def applied_files(journal: Journal, apply_id: int) -> list[FileChange]:
    """The managed files apply `apply_id` wrote or removed, in the order it did so."""
    history(journal)
    rows = journal.db.execute(
        "SELECT path, existed FROM apply_files WHERE apply = ? ORDER BY seq", (apply_id,)
    ).fetchall()
    return [FileChange(r[0], bool(r[1])) for r in rows]


def shown(value: Any) -> str:
    """A journaled value as sysctl and sysfs print it: a list space-separated."""
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


def interrupted(journal: Journal, dead: set[int]) -> list[int]:
    """Pending applies whose process is gone (among `dead` sessions), newest first: the ones
    rollback and the next changing command undo first."""
    history(journal)
    rows = journal.db.execute(
        "SELECT id, session FROM applies WHERE status = 'pending' ORDER BY id DESC"
    ).fetchall()
    return [int(r[0]) for r in rows if r[1] in dead]
