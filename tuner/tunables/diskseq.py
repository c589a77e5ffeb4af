"""Which attachment of a block device a saved value belongs to: the kernel's disk sequence.

A kernel name is re-used: a loop device detached (or an nbd disk disconnected, a USB disk
pulled) frees `loopN`/`sdX`, and the next `losetup -f` (or disk) takes it. Linux 5.15 and later
number every attachment: `/sys/block/NAME/diskseq` is unique per disk attached since boot, and
a loop device takes a new one whenever its backing file changes, detach included
(Documentation/ABI/testing/sysfs-block). The engine journals it with each block original, and
a restore writes only onto the same attachment (docs/journal.md, "A device replaced").

A kernel without it (before 5.15) has no file: nothing is recorded, and restores behave as
before, by name.
"""

from __future__ import annotations

from probes.hostfs import digits
from tuner.tunables.sysroot import SysRoot

MAX_DISKSEQ = 2**64 - 1
"""The kernel keeps it in a 64-bit unsigned counter."""


def disk_sequence(sys: SysRoot, name: str) -> int | None:
    """The diskseq of block device `name` (a kernel name; a partition gives its disk's), or
    None on a kernel without one, for a name that is not there, or unreadable text."""
    if not name or "/" in name or name in (".", ".."):
        return None
    text = sys.read(f"sys/block/{name}/diskseq")
    if text is None and sys.exists(f"sys/class/block/{name}/partition"):
        # A partition has none of its own: it comes and goes with its disk, one directory up.
        text = sys.read(f"sys/class/block/{name}/../diskseq")
    if text is None or not digits(text) or int(text) > MAX_DISKSEQ:
        return None
    return int(text)


def vacant(sys: SysRoot, name: str) -> bool:
    """True when disk `name` holds no medium: size 0, and no backing file for a loop device
    (one attached over an empty file is someone's). Its queue is nobody's until the next
    attachment, which takes it as it is left."""
    size = sys.read(f"sys/block/{name}/size")
    return size == "0" and not sys.exists(f"sys/block/{name}/loop/backing_file")


def replaced(sys: SysRoot, name: str, then: int) -> str | None:
    """Why disk `name` is no longer the attachment numbered `then` a value was saved from, or
    None when it still is, or when it is vacant: a loop device detached and not attached again
    is nobody's, and putting back what was found there is what its next user should get."""
    now = disk_sequence(sys, name)
    if now == then or vacant(sys, name):
        return None
    shown = "none" if now is None else str(now)
    return f"the device was replaced since the change (diskseq {then} then, {shown} now)"
