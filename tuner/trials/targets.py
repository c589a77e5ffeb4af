"""Where a trial's I/O goes: a block device, or a scratch file iotuner creates and removes.

Reads may go to any block device. Writes go only to a scratch file that iotuner created on a
file system the user named, or to a device the user named with `--destroy-data` and that
`check_disposable` finds holding nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from probes.host_root import live_host
from tuner.errors import BadInput
from tuner.trials.blockdev import (
    block_number,
    device_bytes,
    devices_of_mount,
    kernel_name,
    live_storage,
    mount_of_path,
)
from tuner.trials.fio import escape_path
from tuner.trials.safety import check_disposable, check_scratch_directory
from tuner.tunables.diskseq import disk_sequence
from tuner.tunables.sysroot import live_sysroot
from tuner.units import human_bytes

SCRATCH_PREFIX = "iotuner-scratch"
# The default scratch file: 1 GiB holds the reads of a 5 s trial at up to ~140 MB/s with the
# margin of pagecache.data_set_bytes; faster targets need `size_bytes` from that function.
DEFAULT_SCRATCH_BYTES = 1 << 30
_FREE_SHARE = 0.9  # never take more than this share of the free space
_CHUNK = 1 << 20


@dataclass(frozen=True)
class TrialTarget:
    """A device or a scratch file to run trials on.

    `path`: what fio opens; `devices`: kernel names of the block devices whose /proc/diskstats
    count its I/O; `size_bytes`: the region trials may use; `writable`: writes allowed;
    `directory`: the scratch file's directory (fio makes multi-file data sets there);
    `user_file`: the user's own file, which read-only trials read as it is; `attachments`:
    each device's diskseq when the target was resolved (None where the kernel has none), so a
    trial can tell the device from another that took its name since.
    """

    path: str
    devices: tuple[str, ...]
    size_bytes: int
    writable: bool
    directory: str | None = None
    user_file: bool = False
    attachments: tuple[int | None, ...] = ()

    @property
    def is_scratch(self) -> bool:
        """True for a scratch file (a directory is known), False for a device."""
        return self.directory is not None

    @property
    def through_file_system(self) -> bool:
        """True when fio reads a file (a scratch file or the user's), not a device."""
        return self.is_scratch or self.user_file

    @property
    def raw_devices(self) -> tuple[str, ...]:
        """The devices fio reads itself, not through a file system (a device target's)."""
        return () if self.through_file_system else self.devices

    @property
    def scratch_prefix(self) -> str:
        """The name prefix of every file this process makes in the scratch directory."""
        return f"{SCRATCH_PREFIX}-{os.getpid()}"

    @classmethod
    def device(cls, path: str, *, destroy_data: bool = False) -> TrialTarget:
        """A block device; writable only with `destroy_data` (the user's `--destroy-data`)
        and when check_disposable finds nothing on it. BadInput otherwise."""
        escape_path(path)
        number = block_number(path)
        if number is None:
            raise BadInput(f"{path}: not a block device")
        fs = live_host()
        name = kernel_name(fs, number)
        size = device_bytes(fs, name) if name is not None else None
        if name is None or not size:
            raise BadInput(f"{path}: no such device or it is empty (size 0)")
        if destroy_data:
            check_disposable(path)
        return cls(path=path, devices=(name,), size_bytes=size, writable=destroy_data,
                   attachments=_attachments((name,)))  # fmt: skip

    @classmethod
    def file(cls, path: str | Path) -> TrialTarget:
        """The user's own file, for trials that only read it: the data the user cares about,
        read where it lies (never written). BadInput unless it is a regular, non-empty file
        on a file system with a block device under it."""
        where = Path(path)
        if not where.is_file():
            raise BadInput(f"{where}: not a regular file")
        size = where.stat().st_size
        if size <= 0:
            raise BadInput(f"{where}: the file is empty: nothing to read")
        escape_path(str(where.resolve()))  # BadInput now for a name fio would read otherwise
        devices = _block_devices_under(where)
        return cls(path=str(where.resolve()), devices=devices, size_bytes=size, writable=False,
                   user_file=True, attachments=_attachments(devices))  # fmt: skip

    @classmethod
    @contextmanager
    def scratch(cls, directory: str | Path, size_bytes: int | None = None) -> Iterator[TrialTarget]:
        """A scratch file `iotuner-scratch-PID.dat` of `size_bytes` in `directory`, written
        once so that reads hit real blocks, and removed on leaving (also on errors)."""
        where = Path(directory)
        if not where.is_dir():
            raise BadInput(f"{where}: not a directory")
        check_scratch_directory(where)
        escape_path(str(where.resolve()))
        devices = _block_devices_under(where)
        size = size_bytes or DEFAULT_SCRATCH_BYTES
        free = shutil.disk_usage(where).free
        if size > free * _FREE_SHARE:
            raise BadInput(
                f"{where}: a {human_bytes(size)} scratch file needs more than the "
                f"{human_bytes(free)} free there"
            )
        # A private directory of an unpredictable name (0700): nothing can be planted where
        # iotuner and fio create their files.
        private = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}-{os.getpid()}-", dir=where))
        target = cls(
            path=str(private / f"{SCRATCH_PREFIX}-{os.getpid()}.dat"),
            devices=devices,
            size_bytes=size,
            writable=True,
            directory=str(private),
            attachments=_attachments(devices),
        )
        try:
            _fill(Path(target.path), size)
            yield target
        finally:
            shutil.rmtree(private, ignore_errors=True)


def _block_devices_under(where: Path) -> tuple[str, ...]:
    """The block devices under the file system holding `where`; BadInput when it has none
    (tmpfs, proc, NFS, FUSE): a trial there would measure memory, or nothing iotuner checks."""
    topology = live_storage(live_host())
    mount = mount_of_path(where, topology)
    devices = devices_of_mount(mount, topology) if mount is not None else ()
    if mount is None or not devices:
        fstype = mount.fstype if mount is not None else "an unknown file system"
        raise BadInput(
            f"{where}: on {fstype}, which has no block device under it: a trial there "
            "would measure memory, not storage"
        )
    return devices


def _fill(path: Path, size: int) -> None:
    """Create the file with its blocks allocated, then write every block once.

    fallocate alone leaves extents marked unwritten, which file systems read back as zeros
    without touching the disk; one real write makes reads cost what they cost on data. The
    pattern is random, so a compressing file system (btrfs compress=) stores it whole.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as err:
        raise BadInput(f"{path}: cannot create the scratch file: {err.strerror}") from None
    try:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as err:
            raise BadInput(f"{path}: cannot allocate {human_bytes(size)}: {err.strerror}") from None
        block = os.urandom(_CHUNK)
        done = 0
        while done < size:
            done += os.write(fd, block[: min(_CHUNK, size - done)])
        os.fsync(fd)
        # Written pages stay cached; the first trial must not read them from memory.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _attachments(devices: tuple[str, ...]) -> tuple[int | None, ...]:
    """Each device's diskseq now (None where the kernel numbers none)."""
    sys = live_sysroot()
    return tuple(disk_sequence(sys, name) for name in devices)
