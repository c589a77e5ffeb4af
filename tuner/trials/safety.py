"""May a write trial overwrite this device? Only when nothing on the host says it holds data.

`--destroy-data DEVICE` is the user's word that the device is disposable; these checks are the
host's. Any one of them refuses, with one line naming the device and the reason: partitions,
a mount (of the device, a partition, or a btrfs it belongs to), a holder (md, dm, or a loop
device reading it), a signature blkid recognises (file system, RAID member, swap, partition
table), or the kernel refusing an exclusive open (someone else claims it).

A host changes while a tune runs, so a write trial checks again (`exclusive_writes`) and holds
the kernel's exclusive claim on the device while fio writes: nothing can mount it, assemble it
or put a file system on it meanwhile. Scratch files go only into a directory nobody else may
rename things in (`check_scratch_directory`).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from probes.host_root import live_host
from tuner.errors import BadInput
from tuner.topology.model import Topology
from tuner.trials.blockdev import block_number, kernel_name, live_storage
from tuner.trust import Untrusted, trusted_dir


def check_disposable(device: str, topology: Topology | None = None) -> None:
    """Return when `device` may be overwritten; otherwise BadInput with the reason."""
    number = block_number(device)
    if number is None:
        raise BadInput(f"{device}: not a block device")
    fs = live_host()
    name = kernel_name(fs, number)
    if name is None:
        raise BadInput(f"{device}: no such device in /sys/dev/block")
    topology = topology or live_storage(fs)
    reason = (
        _partitions(name, topology)
        or _mounted(name, topology)
        or _held(name, topology)
        or _signature(device)
        or _claimed(device)
    )
    if reason is not None:
        raise BadInput(f"{device}: {reason}; refusing to write to it")


def _family(name: str, topology: Topology) -> list[str]:
    """The device and its partitions."""
    return [name, *_partition_names(name, topology)]


def _partition_names(name: str, topology: Topology) -> list[str]:
    return [
        upper
        for upper in topology.upper_devices(name)
        if (dev := topology.block_device(upper)) is not None and dev.partition is not None
    ]


def _partitions(name: str, topology: Topology) -> str | None:
    parts = _partition_names(name, topology)
    return f"has partitions ({', '.join(parts)})" if parts else None


def _mounted(name: str, topology: Topology) -> str | None:
    family = _family(name, topology)
    for mount in topology.mounts:
        if mount.kname in family:
            which = "is" if mount.kname == name else f"its partition {mount.kname} is"
            return f"{which} mounted on {mount.mountpoint}"
    for multi in topology.filesystems:
        if set(multi.devices) & set(family):
            return f"is a member of the mounted {multi.fstype} file system {multi.uuid}"
    return None


def _held(name: str, topology: Topology) -> str | None:
    family = _family(name, topology)
    for member in family:
        for upper in topology.upper_devices(member):
            if upper not in family:
                return f"held by {upper} (it sits on {member})"
    # A loop device over a device node registers no holder; find it by its backing file.
    numbers = {block_number(f"/dev/{member}") for member in family} - {None}
    for node in topology.nodes:
        loop = getattr(node, "loop", None)
        backing = getattr(loop, "backing_file", None)
        if backing and block_number(backing) in numbers:
            return f"held by {node.name} (a loop device over {backing})"
    return None


def _signature(device: str) -> str | None:
    blkid = shutil.which("blkid")
    if blkid is None:
        return "cannot check for signatures: blkid not found (Debian package util-linux)"
    # -p probes the device itself (not blkid's cache); exit 2 means nothing was found.
    done = subprocess.run(
        [blkid, "-p", "-o", "export", device],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode == 2:
        return None
    found = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    if "PTTYPE" in found:
        return f"holds a {found['PTTYPE']} partition table (blkid -p)"
    if "TYPE" in found:
        return f"holds {found['TYPE']} (blkid -p finds its signature)"
    if done.returncode != 0:
        # 8: several signatures that contradict each other; 4: usage or probing error.
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        return f"blkid -p cannot tell what it holds ({detail})"
    return None


def _claimed(device: str) -> str | None:
    # O_EXCL on a block device asks the kernel for an exclusive claim: it fails with EBUSY
    # while a file system, md, dm or swap holds the device, which catches what the mount
    # table and sysfs did not show (another mount namespace, a holder just being set up).
    try:
        fd = os.open(device, os.O_RDONLY | os.O_EXCL)
    except OSError as err:
        if err.errno == errno.EBUSY:
            return "in use (the kernel refuses an exclusive open)"
        return f"cannot open it ({err.strerror})"
    os.close(fd)
    return None


@contextmanager
def exclusive_writes(device: str | None) -> Iterator[None]:
    """Around one write trial on `device` (None: not a device write, nothing to do): check it
    again (check_disposable), then hold its exclusive claim until the trial ends. fio's own
    opens are not exclusive and go through; a mount, mkfs or md meanwhile gets EBUSY."""
    if device is None:
        yield
        return
    check_disposable(device)
    try:
        fd = os.open(device, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as err:
        raise BadInput(f"{device}: cannot claim it for the trial ({err.strerror})") from None
    try:
        yield
    finally:
        os.close(fd)


def check_scratch_directory(directory: Path) -> None:
    """Return when scratch files may go into `directory`: not a link, owned by root (or this
    user) and writable by others only when sticky, under directories that are too
    (`tuner.trust`), so nobody else can rename our files or the directory itself and put a
    link to a device in their place. BadInput otherwise."""
    try:
        trusted_dir(directory, "the scratch directory", sticky_ok=True)
    except Untrusted as err:
        raise Untrusted(
            f"{err}; someone else could swap iotuner's scratch files there for links: give "
            "a directory of your own"
        ) from None
