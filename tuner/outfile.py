"""Every file iotuner writes for a user or for itself: one way, safe in a shared directory.

iotuner runs as root and is often pointed at /tmp or a shared directory. A temporary of a
predictable name beside the target (`report.html.part`) is a name anybody may plant a link at
first, and an open that follows it writes root's output into the file the link names. So the
temporary here has a random name and is created O_CREAT|O_EXCL|O_NOFOLLOW in the target's
directory (held open by descriptor, so a directory renamed meanwhile is not followed), written,
fsynced, given its mode and renamed over the target: a link planted at the target is replaced,
never written through. A target that exists and is not a regular file or a link (a device, a
FIFO, a directory) is refused, as are names holding control characters.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from tuner.errors import BadInput
from tuner.trust import Untrusted, trusted_parents

Writer = Callable[[BinaryIO], None]
_TRIES = 16
_NAME_MAX = 255  # bytes in one path component, on every Linux file system


def write_file(
    path: Path,
    content: bytes | str | Writer,
    *,
    mode: int = 0o600,
    what: str = "output",
    trusted: bool = False,
    owner: tuple[int, int] | None = None,
) -> Path:
    """Write `content` (bytes, text as UTF-8, or a function writing to a binary stream) to
    `path` atomically, as the module says; returns `path`. BadInput (one line naming `path`
    and `what` it is) when it cannot be written there. `trusted`: the directory must not be a
    link and every directory above it must be root's or ours (`tuner.trust.trusted_parents`),
    so no path to it can be swapped for another, as for the metrics textfile root rewrites
    unattended. The directory itself may be another user's (node-exporter's): the writes go
    through its descriptor, and its owner can only remove or replace what we put there.
    `owner`: (uid, gid) the file is given before it is renamed into place."""
    text = str(path)
    if any(not ch.isprintable() for ch in text):
        raise BadInput(f"{text!r}: the {what} path holds a control character; name another")
    folder, name = path.parent, path.name
    if not name or name in (".", ".."):
        raise BadInput(f"{path}: name the {what} file to write")
    if trusted:
        trusted_parents(folder, f"the {what} directory")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (os.O_NOFOLLOW if trusted else 0)
    try:
        dir_fd = os.open(folder, flags)
    except OSError as err:
        if trusted and err.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(folder):
            raise Untrusted(f"{folder}: the {what} directory is a symbolic link; name the "
                            "directory itself") from None  # fmt: skip
        raise BadInput(f"{path}: cannot write the {what} there ({_why(err)})") from None
    try:
        _check_target(dir_fd, path, what)
        _write_in(dir_fd, path, content, mode, what, owner)
    finally:
        os.close(dir_fd)
    return path


def check_output_path(path: Path, option: str) -> None:
    """Refuse, before any work, an output path `write_file` could not write: one line naming
    `option` (`--out`), for a control character, a missing or unusable directory, a name
    too long for the file system, or a directory where the file should go."""
    text = str(path)
    if any(not ch.isprintable() for ch in text):
        raise BadInput(f"{option} {text!r}: holds a control character; name another file")
    try:
        parent_ok = path.parent.is_dir()
        is_dir = path.is_dir()
    except OSError as err:  # ENAMETOOLONG, EACCES: Path.is_dir raises them
        raise BadInput(f"{option} {text[:200]}: cannot write there ({_why(err)})") from None
    if not parent_ok:
        raise BadInput(f"{option} {path}: directory {path.parent} does not exist")
    if is_dir:
        raise BadInput(f"{option} {path}: is a directory; name the file to write")
    if len(os.fsencode(path.name)) > _NAME_MAX:
        raise BadInput(f"{option} {text[:200]}...: a file name is at most {_NAME_MAX} bytes")


def _check_target(dir_fd: int, path: Path, what: str) -> None:
    try:
        info = os.lstat(path.name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    except OSError as err:
        raise BadInput(f"{path}: cannot write the {what} there ({_why(err)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{path}: is a directory; name the {what} file to write")
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise BadInput(f"{path}: not a regular file; iotuner will not replace it with the {what}")


def _write_in(
    dir_fd: int,
    path: Path,
    content: bytes | str | Writer,
    mode: int,
    what: str,
    owner: tuple[int, int] | None,
) -> None:
    fd, temp = _create(dir_fd, path, what)
    try:
        with os.fdopen(fd, "wb") as out:
            if isinstance(content, str):
                out.write(content.encode())
            elif isinstance(content, bytes):
                out.write(content)
            else:
                content(out)
            out.flush()
            if owner is not None:
                os.fchown(out.fileno(), *owner)
            os.fchmod(out.fileno(), mode)  # after fchown, which clears set-id bits
            os.fsync(out.fileno())
        os.replace(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise BadInput(f"{path}: cannot write the {what} ({_why(err)})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _create(dir_fd: int, path: Path, what: str) -> tuple[int, str]:
    """A new 0600 file of a random name in the directory: O_EXCL, so a name planted first (a
    link or anything else) makes it pick another, never open it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(_TRIES):
        temp = f".iotuner-{secrets.token_hex(8)}.tmp"
        try:
            return os.open(temp, flags, 0o600, dir_fd=dir_fd), temp
        except FileExistsError:
            continue
        except OSError as err:
            raise BadInput(f"{path}: cannot write the {what} there ({_why(err)})") from None
    raise BadInput(f"{path}: cannot write the {what} there (no free temporary name)")


def _why(err: OSError) -> str:
    return err.strerror or str(err)
