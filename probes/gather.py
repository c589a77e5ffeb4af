"""`iotuner probe --gather`: capture what the probes read into a tar.xz that `--root` replays.

Like hwloc-gather-topology, but the capture holds exactly the files, directories and links the
probes touched on this run, so it stays small (a few hundred kB) and replays to the same topology.
The output of the commands read on a live host (`ethtool -g eth0`) goes where sos report puts
it (`sos_commands/networking/ethtool_-g_eth0`), where HostFS.command reads it back.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
import tempfile
import time
import zlib
from pathlib import Path
from typing import BinaryIO

from probes.hostfs import MAX_FILE_BYTES, HostFS
from tuner.outfile import write_file

_SUFFIXES = (".tar.xz", ".txz", ".tar.gz", ".tgz", ".tar.bz2", ".tar")
MAX_CAPTURE_BYTES = 256 << 20
"""The most a capture may unpack to, headers included: a live capture of a large host is a few
MB (tests/commands/test_probe.py keeps it under 2 MB packed), so more is a decompression bomb."""
MAX_CAPTURE_MEMBERS = 100_000
"""The most entries a capture may hold: the probes of a large host touch some thousands of paths."""
_NAME_MAX = 255
"""Linux's longest file name: a longer component is a hostile member, not a sysfs file."""
_ARCHIVE_ERRORS = (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)
"""What a corrupt, truncated or hostile archive raises from tarfile and the decompressors."""


def write_capture(fs: HostFS, out: Path, top: str) -> int:
    """Write every path `fs` touched into `out` (xz tar) under directory `top`; returns a count.
    Written as every output file is (`tuner.outfile`): nothing planted beside `out` is followed."""
    counted: list[int] = []

    def archive(stream: BinaryIO) -> None:
        with tarfile.open(fileobj=stream, mode="w:xz") as tar:
            counted.append(_add_all(tar, fs, top))

    write_file(out, archive, mode=0o600, what="capture")
    return counted[0]


def _add_all(tar: tarfile.TarFile, fs: HostFS, top: str) -> int:
    """Add every path `fs` touched, and every command output it read, under `top`."""
    now = time.time()
    count = 0
    tar.addfile(_info(top, tarfile.DIRTYPE, now))
    for rel in sorted(fs.touched):
        info, data = _capture_one(fs.root / rel, f"{top}/{rel}", now)
        if info is not None:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
            count += 1
    made = set(fs.touched)
    for rel, output in sorted(fs.outputs.items()):
        for parent in _parents(rel):
            if parent not in made:
                made.add(parent)
                tar.addfile(_info(f"{top}/{parent}", tarfile.DIRTYPE, now))
        info = _info(f"{top}/{rel}", tarfile.REGTYPE, now)
        info.size = len(output)
        tar.addfile(info, io.BytesIO(output))
        count += 1
    return count


def _parents(rel: str) -> list[str]:
    """ "a/b/c" -> ["a", "a/b"]: the directories a member needs before it."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _capture_one(path: Path, name: str, now: float) -> tuple[tarfile.TarInfo | None, bytes | None]:
    try:
        st = os.lstat(path)
    except OSError:
        return None, None
    if stat.S_ISLNK(st.st_mode):
        info = _info(name, tarfile.SYMTYPE, now)
        info.linkname = os.readlink(path)
        return info, None
    if stat.S_ISDIR(st.st_mode):
        return _info(name, tarfile.DIRTYPE, now), None
    try:
        # sysfs reports 4096 for every attribute: the size is what a read returns.
        data = path.read_bytes()
    except OSError:
        data = b""
    info = _info(name, tarfile.REGTYPE, now)
    info.size = len(data)
    return info, data


def _info(name: str, kind: bytes, now: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mtime = int(now)
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


def is_capture(path: Path) -> bool:
    """True when `path` names a capture archive rather than a root directory."""
    return path.is_file() and path.name.endswith(_SUFFIXES)


def extract_capture(archive: Path) -> tuple[Path, tempfile.TemporaryDirectory[str]]:
    """Unpack a capture into a temporary directory; returns its root and the directory handle.

    Raises ValueError (one line naming the archive) when it is not a capture: unreadable or
    corrupt, a member that is not a plain file, directory or link inside the tree (tarfile's
    "data" filter), a member over MAX_FILE_BYTES, more than MAX_CAPTURE_MEMBERS members or
    MAX_CAPTURE_BYTES unpacked, or not exactly one top directory.
    """
    holder = tempfile.TemporaryDirectory(prefix="iotuner-capture-")
    dest = Path(holder.name)
    try:
        _unpack(archive, dest)
    except _ARCHIVE_ERRORS as err:
        holder.cleanup()
        raise ValueError(f"{archive}: not a readable capture ({_one_line(err)})") from None
    except _Refused as err:
        holder.cleanup()
        raise ValueError(f"{archive}: {err}") from None
    tops = [p for p in dest.iterdir() if p.is_dir() and not p.is_symlink()]
    if len(tops) != 1:
        holder.cleanup()
        raise ValueError(f"{archive}: expected one top directory, found {len(tops)}")
    return tops[0], holder


class _Refused(Exception):
    """A capture over a bound: its message names the bound."""


class _Bounded(io.RawIOBase):
    """The decompressed stream, ended with _Refused past MAX_CAPTURE_BYTES: tarfile reads a
    PAX header or a long name whole into memory, so the bound must hold below tarfile too."""

    def __init__(self, inner: io.BufferedIOBase) -> None:
        self.inner = inner
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(len(buffer))
        self.total += len(data)
        if self.total > MAX_CAPTURE_BYTES:
            raise _Refused(f"unpacked to over {MAX_CAPTURE_BYTES} bytes; not a capture")
        buffer[: len(data)] = data
        return len(data)


def _decompressed(archive: Path) -> io.BufferedIOBase:
    """The tar stream inside `archive`, chosen by its first bytes (a name may lie)."""
    with open(archive, "rb") as probe:
        magic = probe.read(6)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.open(archive)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.open(archive)
    if magic.startswith(b"BZh"):
        return bz2.open(archive)
    return open(archive, "rb")


def _unpack(archive: Path, dest: Path) -> None:
    """Extract member by member from a stream, checking each before it touches the disk."""
    with _decompressed(archive) as raw, _Bounded(raw) as bounded:
        stream = io.BufferedReader(bounded, 1 << 16)
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for count, info in enumerate(tar, 1):
                if count > MAX_CAPTURE_MEMBERS:
                    raise _Refused(f"more than {MAX_CAPTURE_MEMBERS} members; not a capture")
                why = _member_fault(info)
                if why is not None:
                    raise _Refused(f"member {_one_line(info.name)[:80]!r}: {why}; not a capture")
                try:
                    tar.extract(info, dest, filter="data")
                except tarfile.FilterError as err:
                    raise _Refused(f"member refused: {_one_line(err)}") from None
        # tarfile stops at the end-of-archive blocks; reading on to the end of the stream
        # makes gzip, bz2 and xz check their CRC, so a damaged capture is not half-believed.
        while stream.read(1 << 16):
            pass


def _member_fault(info: tarfile.TarInfo) -> str | None:
    """Why a member may not be unpacked before the data filter sees it, or None."""
    if info.name.startswith("/"):
        return "an absolute name"
    if info.size > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES} bytes"
    if any(len(os.fsencode(part)) > _NAME_MAX for part in info.name.split("/")):
        return f"a name component over {_NAME_MAX} bytes"
    return None


def _one_line(err: object) -> str:
    """An error's text on one line and short: it may quote a hostile member's name."""
    text = " ".join(str(err).split())
    return text if len(text) <= 160 else text[:160] + "..."
