"""`iotuner probe --gather`: capture what the probes read into a tar.xz that `--root` replays.

Like hwloc-gather-topology, but the capture holds exactly the files, directories and links the
probes touched on this run, so it stays small (a few hundred kB) and replays to the same topology.
The output of the commands read on a live host (`ethtool -g eth0`) goes where sos report puts
it (`sos_commands/networking/ethtool_-g_eth0`), where HostFS.command reads it back.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from probes.hostfs import HostFS
from tuner.outfile import write_file

_SUFFIXES = (".tar.xz", ".txz", ".tar.gz", ".tgz", ".tar.bz2", ".tar")


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

    Raises ValueError naming the archive when it is not a capture (unreadable, unsafe member
    paths, or not exactly one top directory).
    """
    holder = tempfile.TemporaryDirectory(prefix="iotuner-capture-")
    dest = Path(holder.name)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError, EOFError) as err:
        holder.cleanup()
        raise ValueError(f"{archive}: not a readable capture ({err})") from None
    tops = [p for p in dest.iterdir() if p.is_dir() and not p.is_symlink()]
    if len(tops) != 1:
        holder.cleanup()
        raise ValueError(f"{archive}: expected one top directory, found {len(tops)}")
    return tops[0], holder
