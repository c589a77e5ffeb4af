"""Where iotuner keeps its state: the journal database and the lab's record.

The state directory is one of the two things iotuner trusts (root is the other): the journal
in it says what to write back to the host, as root. So it must be iotuner's own: owned by the
user running iotuner (root) and writable by nobody else, and so must every directory above it
(one that others may write and that is not sticky lets them rename ours away and put theirs in
its place) and the database file. Anything else is UntrustedState, before any of it is read.
"""

from __future__ import annotations

import os
from pathlib import Path

from tuner.trust import Untrusted, ownership_problem, private_dir
from tuner.trust import trusted_dir as _trusted_dir
from tuner.trust import trusted_file as _trusted_file
from tuner.trust import trusted_parents as _trusted_parents

__all__ = ["UntrustedState", "ownership_problem", "state_dir", "state_path", "trusted_database",
           "trusted_dir", "trusted_file", "trusted_parents"]  # fmt: skip

DEFAULT_STATE_DIR = Path("/var/lib/iotuner")


# One class for every trust refusal: `except UntrustedState` catches them all.
UntrustedState = Untrusted
_WHAT = "the state directory"


def state_path() -> Path:
    """$IOTUNER_STATE_DIR or /var/lib/iotuner, without creating it."""
    return Path(os.environ.get("IOTUNER_STATE_DIR") or DEFAULT_STATE_DIR)


def state_dir(path: Path | None = None) -> Path:
    """The state directory (`path`, or `state_path()`), checked, then created (mode 0700, and
    any missing parent too) on first use; UntrustedState when it, or a directory above it, is
    not iotuner's own. Nothing is written in it before this returns."""
    return private_dir(state_path() if path is None else path, _WHAT)


def trusted_parents(path: Path) -> None:
    """Every existing directory above the state directory `path` is root's or ours
    (`tuner.trust.trusted_parents`)."""
    _trusted_parents(path, _WHAT)


def trusted_dir(path: Path) -> None:
    """`path` is a directory (not a link) owned by root or us and writable by nobody else."""
    _trusted_dir(path, _WHAT)


def trusted_file(path: Path) -> None:
    """An existing `path` is a regular file (not a link) owned by root or us, writable by
    nobody else; a missing one is fine (it will be created 0600)."""
    _trusted_file(path, "state")


def trusted_database(path: Path) -> None:
    """The journal `path`, its directory and SQLite's -wal and -shm beside it are ours."""
    trusted_dir(path.parent)
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        trusted_file(path.with_name(name))
