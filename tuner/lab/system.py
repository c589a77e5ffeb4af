"""The few system operations the lab needs: commands, loop devices, mounts and backing files."""

from __future__ import annotations

import mmap
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tuner.errors import IotunerError

_OCTAL = re.compile(r"[0-7]{3}")

SYS_BLOCK = Path("/sys/block")
FILL_CHUNK = 4 << 20


class LabError(IotunerError):
    """A lab operation failed on the system; exit code 1."""


def run(cmd: Sequence[str]) -> str:
    """Run a command, return its stdout; LabError with its last stderr line if it fails."""
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LabError(f"{cmd[0]}: {err}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise LabError(f"{' '.join(cmd)}: {lines[-1] if lines else f'exit {done.returncode}'}")
    return done.stdout


def loop_attach(backing: Path, direct_io: bool) -> str:
    """Attach a free loop device to `backing`; its path (/dev/loopN)."""
    cmd = ["losetup", "--find", "--show"]
    if direct_io:
        cmd.append("--direct-io=on")
    return run([*cmd, str(backing)]).strip()


def loop_detach(device: str) -> None:
    """Detach a loop device."""
    run(["losetup", "--detach", device])


def loop_backing(device: str) -> str | None:
    """The file behind loop `device`, None if it is not attached."""
    path = SYS_BLOCK / Path(device).name / "loop" / "backing_file"
    try:
        return path.read_text().strip().removesuffix(" (deleted)")
    except OSError:
        return None


def loops_backed_by(backing: str) -> list[str]:
    """Every attached loop device whose backing file is `backing`."""
    found = []
    for entry in sorted(SYS_BLOCK.glob("loop*")):
        if loop_backing(entry.name) == backing:
            found.append(f"/dev/{entry.name}")
    return found


def loops_under(directory: str) -> list[str]:
    """Every attached loop device whose backing file lies below `directory`."""
    prefix = directory.rstrip("/") + "/"
    return [
        f"/dev/{e.name}"
        for e in sorted(SYS_BLOCK.glob("loop*"))
        if (loop_backing(e.name) or "").startswith(prefix)
    ]


def majmin(device: str) -> str:
    """'MAJ:MIN' of a block device node."""
    rdev = os.stat(device).st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def mounts() -> list[tuple[str, str]]:
    """(source, mountpoint) of every mount this process sees."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        found.append((_unescape(fields[sep + 2]), _unescape(fields[4])))
    return found


def is_mounted(target: str) -> bool:
    """Whether something is mounted on `target`."""
    return any(point == target for _, point in mounts())


def mounts_under(directory: str) -> list[str]:
    """Mountpoints at or below `directory`, deepest first."""
    prefix = directory.rstrip("/") + "/"
    points = [p for _, p in mounts() if p == directory or p.startswith(prefix)]
    return sorted(set(points), key=len, reverse=True)


def mount(source: str, target: str, options: str | None = None) -> None:
    """Mount `source` on `target`."""
    run(["mount", *(["-o", options] if options else []), source, target])


def umount(target: str) -> None:
    """Unmount `target`."""
    run(["umount", target])


def sparse(path: Path, size: int) -> None:
    """Create `path` as a `size`-byte sparse file.

    Used for files on tmpfs only, whose holes cost nothing to read and have no device below to
    skip; memory is taken as they are written (the lab checks there is enough first).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


def fill(path: Path, size: int) -> None:
    """Create `path` and write all `size` bytes with O_DIRECT.

    Fully written, not fallocated: direct reads of unwritten extents return zeros without
    touching the device below, so a disk file with holes would skip its bus.
    """
    buf = mmap.mmap(-1, FILL_CHUNK)  # page-aligned, as O_DIRECT wants
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
    try:
        view = memoryview(buf)
        written = 0
        while written < size:
            written += os.write(fd, view[: min(FILL_CHUNK, size - written)])
        os.fsync(fd)
        view.release()
    finally:
        os.close(fd)
        buf.close()


def free_bytes(directory: str) -> int:
    """Bytes free for an unprivileged user below `directory`."""
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize


def mem_available() -> int:
    """MemAvailable from /proc/meminfo, in bytes (tmpfs files live in memory)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _unescape(text: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and _OCTAL.fullmatch(code := text[i + 1 : i + 4]):
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
