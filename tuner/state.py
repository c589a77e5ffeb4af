"""Where iotuner keeps its state: the journal database and the lab's record.

The state directory is one of the two things iotuner trusts (root is the other): the journal
in it says what to write back to the host, as root. So it must be iotuner's own: owned by the
user running iotuner (root) and writable by nobody else, and so must every directory above it
(one that others may write and that is not sticky lets them rename ours away and put theirs in
its place) and the database file. Anything else is UntrustedState, before any of it is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tuner.errors import BadInput

DEFAULT_STATE_DIR = Path("/var/lib/iotuner")


class UntrustedState(BadInput):
    """The state directory or a file in it could have been written by someone else; exit 2."""


def state_path() -> Path:
    """$IOTUNER_STATE_DIR or /var/lib/iotuner, without creating it."""
    return Path(os.environ.get("IOTUNER_STATE_DIR") or DEFAULT_STATE_DIR)


def state_dir() -> Path:
    """The state directory, created (mode 0700) on first use; UntrustedState when it, or a
    directory above it, is not iotuner's own."""
    path = state_path()
    trusted_parents(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    trusted_dir(path)
    return path


def ownership_problem(info: os.stat_result, *, sticky_ok: bool) -> str | None:
    """Why a file or directory with this stat could be someone else's to change, or None:
    not owned by root or this user, or writable by others (for a directory, unless sticky
    and `sticky_ok`: then others may not rename or remove what is ours in it)."""
    owner = os.geteuid()
    if info.st_uid not in (owner, 0):
        return f"owned by uid {info.st_uid}, not by uid {owner}"
    writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (sticky_ok and info.st_mode & stat.S_ISVTX):
        return f"writable by others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def trusted_parents(path: Path) -> None:
    """Every existing directory above `path` is root's or ours, and writable by others only
    when sticky (as /tmp); UntrustedState naming the first that is not."""
    for parent in reversed(Path(os.path.abspath(path)).parents):
        try:
            info = os.stat(parent)
        except FileNotFoundError:
            return
        why = ownership_problem(info, sticky_ok=True)
        if why is not None:
            raise UntrustedState(f"{parent}: {why}; it holds the state directory {path}")


def trusted_dir(path: Path) -> None:
    """`path` is a directory (not a link) owned by root or us and writable by nobody else."""
    trusted_parents(path)
    try:
        info = os.lstat(path)
    except OSError as err:
        raise UntrustedState(f"{path}: cannot use the state directory ({err.strerror})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UntrustedState(f"{path}: the state directory is not a directory")
    why = ownership_problem(info, sticky_ok=False)
    if why is not None:
        raise UntrustedState(f"{path}: {why}; iotuner keeps its state only in its own directory")


def trusted_file(path: Path) -> None:
    """An existing `path` is a regular file (not a link) owned by root or us, writable by
    nobody else; a missing one is fine (it will be created 0600)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise UntrustedState(f"{path}: not a regular file; iotuner will not use it")
    why = ownership_problem(info, sticky_ok=False)
    if why is not None:
        raise UntrustedState(f"{path}: {why}; iotuner will not use it")


def trusted_database(path: Path) -> None:
    """The journal `path`, its directory and SQLite's -wal and -shm beside it are ours."""
    trusted_dir(path.parent)
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        trusted_file(path.with_name(name))
