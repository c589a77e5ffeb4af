"""Who keeps a block device open: what `lab down` names when a loop device will not detach.

A device is held three ways the kernel shows: a process has it open (a file descriptor in
/proc/PID/fd), a file system on it is mounted, possibly only in another mount namespace (a
copy a process made by unsharing its namespace: it shows in that process's mountinfo, in no
fd), or a stacked device is built on it (/sys/block/DEV/holders: a md array, a dm target).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PROC = Path("/proc")
SYS_BLOCK = Path("/sys/block")
_OCTAL = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space in a path as \040


def holders(device: str) -> list[str]:
    """What holds block `device` (/dev/NAME), one phrase each, e.g. "fio pid 12 has it open";
    empty when nothing the kernel shows does (or the device is gone)."""
    name = Path(device).name
    try:
        rdev = os.stat(f"/dev/{name}").st_rdev
    except OSError:
        return []
    number = f"{os.major(rdev)}:{os.minor(rdev)}"  # as mountinfo writes it
    found = [f"{held} is built on it" for held in _stacked(name)]
    own_ns = _mount_ns(PROC / "self")
    seen_ns: set[str] = set()
    for proc in sorted(PROC.glob("[0-9]*"), key=lambda p: int(p.name)):
        if _has_open(proc, f"/dev/{name}"):
            found.append(f"{_who(proc)} has it open")
        ns = _mount_ns(proc)
        if ns is None or ns == own_ns or ns in seen_ns:
            continue
        seen_ns.add(ns)  # one process names a namespace: its others see the same mounts
        if point := _mounted_at(proc, number):
            found.append(f"{_who(proc)} has it mounted at {point} in its own mount namespace")
    if point := _mounted_at(PROC / "self", number):
        found.append(f"it is mounted at {point}")
    return found


def _stacked(name: str) -> list[str]:
    try:
        return sorted(entry.name for entry in (SYS_BLOCK / name / "holders").iterdir())
    except OSError:
        return []


def _who(proc: Path) -> str:
    try:
        comm = (proc / "comm").read_text().strip()
    except OSError:
        comm = "?"  # it exited while we looked
    return f"{comm} pid {proc.name}"


def _mount_ns(proc: Path) -> str | None:
    try:
        return os.readlink(proc / "ns" / "mnt")
    except OSError:
        return None


def _has_open(proc: Path, path: str) -> bool:
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        # readlink, not stat: a stat follows the link into a file a stuck server may hold.
        try:
            if os.readlink(fd) == path:
                return True
        except OSError:
            continue
    return False


def _mounted_at(proc: Path, number: str) -> str | None:
    try:
        lines = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[2] == number:
            return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
    return None
