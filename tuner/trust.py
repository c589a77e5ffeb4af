"""Is a directory iotuner's own? The one walk every directory iotuner writes into goes through.

iotuner runs as root. A directory it writes into (the state directory, a scratch directory,
the metrics textfile's directory, `verify --keep`) must be root's or ours and writable by
nobody else, and so must every directory above it: one that others may write and that is not
sticky lets them rename ours away and put theirs (or a link to a device) in its place. /tmp is
fine above (sticky: nobody may rename what is ours). The last component is looked at with
lstat (O_NOFOLLOW): a link there is refused, not followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tuner.errors import BadInput


class Untrusted(BadInput):
    """A directory or file could have been written by someone else; exit 2."""


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


def trusted_parents(path: Path, what: str) -> None:
    """Every existing directory above `path` is root's or ours, and writable by others only
    when sticky (as /tmp); Untrusted naming the first that is not, and `what` `path` is."""
    for parent in reversed(Path(os.path.abspath(path)).parents):
        try:
            info = os.stat(parent)
        except FileNotFoundError:
            return
        except OSError as err:
            failed = f"cannot check it ({err.strerror})"
            raise Untrusted(f"{parent}: {failed}; it holds {what} {path}") from None
        why = ownership_problem(info, sticky_ok=True)
        if why is not None:
            raise Untrusted(f"{parent}: {why}; it holds {what} {path}")


def trusted_dir(path: Path, what: str, *, sticky_ok: bool = False) -> None:
    """`path` is a directory (not a link) owned by root or us and writable by nobody else
    (or sticky, with `sticky_ok`), under trusted parents; Untrusted otherwise."""
    trusted_parents(path, what)
    try:
        info = os.lstat(path)
    except OSError as err:
        raise Untrusted(f"{path}: cannot use {what} ({err.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise Untrusted(f"{path}: {what} is a symbolic link; name the directory itself")
    if not stat.S_ISDIR(info.st_mode):
        raise Untrusted(f"{path}: {what} is not a directory")
    why = ownership_problem(info, sticky_ok=sticky_ok)
    if why is not None:
        raise Untrusted(f"{path}: {why}; iotuner uses {what} only when nobody else may change it")


def trusted_file(path: Path, what: str) -> None:
    """An existing `path` is a regular file (not a link) owned by root or us, writable by
    nobody else; a missing one is fine (it will be created 0600)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise Untrusted(f"{path}: not a regular file; iotuner will not use it as {what}")
    why = ownership_problem(info, sticky_ok=False)
    if why is not None:
        raise Untrusted(f"{path}: {why}; iotuner will not use it as {what}")


def private_dir(path: Path, what: str) -> Path:
    """`path` as a trusted directory: its parents checked first, then created 0700 (with any
    missing parents, 0700 too) when missing, then checked itself. Untrusted otherwise."""
    trusted_parents(path, what)
    missing = [p for p in (path, *path.parents) if not os.path.lexists(p)]
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass  # made meanwhile: trusted_dir below looks at what is there
        except OSError as err:
            raise Untrusted(f"{directory}: cannot create {what} ({err.strerror})") from None
    trusted_dir(path, what)
    return path
