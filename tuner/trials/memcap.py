"""A memory cgroup for one trial, so fio caches no more of its data than production can.

A host whose data set is larger than its page cache serves a share of its reads from memory
and the rest from the disk; a trial on the same data with the whole of a development machine's
memory would serve them all from memory after a while. fio runs in a memory cgroup of its own
(cgroup v1 `memory.limit_in_bytes`, or v2 `memory.max`) sized to the share of the trial's data
set that production's cache holds (tuner/trials/dataset.py); page cache a process brings in is
charged to its cgroup, and the kernel reclaims within the limit.

The cgroup is made as `iotuner-trial-PID-N` under the memory hierarchy's root and removed when
the trial ends; one left by a killed iotuner is removed by the next trial (`remove_stale`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from probes.hostfs import digits
from tuner.errors import IotunerError

V1_ROOT = Path("/sys/fs/cgroup/memory")
V2_ROOT = Path("/sys/fs/cgroup/unified")
PREFIX = "iotuner-trial-"
# The most of fio's own memory a trial's cgroup allows for (its limit when made; CacheHold
# then follows what fio really uses, 8 MiB for two mmap jobs on the lab): measured 27-56 MiB
# peak for direct-I/O jobs that cache nothing (its binaries' pages, shared job data,
# buffers); the I/O buffers (bs x iodepth per job) come on top, and the caller adds them.
FIO_OVERHEAD_BYTES = 48 << 20
_counter = itertools.count(1)


@dataclass(frozen=True)
class MemoryCap:
    """A trial's memory cgroup: its directory, cgroup version and limit in bytes."""

    path: Path
    version: int
    limit_bytes: int

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to join the cgroup."""
        return self.path / "cgroup.procs"

    def joiner(self) -> Callable[[], None]:
        """A function for subprocess' preexec_fn: the child joins the cgroup before exec, so
        fio and every job process it forks are charged here (only os calls: it runs between
        fork and exec)."""
        procs = str(self.procs)

        def join() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)

        return join

    def file_bytes(self) -> int:
        """Page-cache bytes charged to the cgroup now (active + inactive file pages)."""
        stat = _stat(self.path / "memory.stat")
        if self.version == 1:
            return stat.get("total_active_file", 0) + stat.get("total_inactive_file", 0)
        return stat.get("active_file", 0) + stat.get("inactive_file", 0)

    def usage_bytes(self) -> int | None:
        """All memory charged to the cgroup now (v1 usage_in_bytes, v2 memory.current)."""
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        try:
            return int((self.path / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def oom_kills(self) -> int:
        """Processes the kernel has killed for memory in this cgroup (the `oom_kill` count of
        v1 memory.oom_control, v2 memory.events; 0 where the kernel does not count them)."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        return _stat(self.path / name).get("oom_kill", 0)

    def set_limit(self, limit_bytes: int) -> None:
        """Move the cgroup's limit (the kernel reclaims page cache to meet a lower one); a
        limit the kernel refuses (it could not reclaim enough yet) is left for the next try."""
        name = "memory.limit_in_bytes" if self.version == 1 else "memory.max"
        with contextlib.suppress(OSError):
            (self.path / name).write_text(str(limit_bytes))


def backend() -> tuple[int, Path] | None:
    """(1, v1 root) or (2, v2 root) where a memory cgroup can be made here; None otherwise."""
    if (V1_ROOT / "memory.limit_in_bytes").exists() or (V1_ROOT / "memory.stat").exists():
        return 1, V1_ROOT
    for root in (V2_ROOT, Path("/sys/fs/cgroup")):
        controllers = root / "cgroup.controllers"
        try:
            if "memory" in controllers.read_text().split():
                return 2, root
        except OSError:
            continue
    return None


@contextmanager
def memory_cap(limit_bytes: int) -> Iterator[MemoryCap]:
    """A fresh memory cgroup limited to `limit_bytes`, removed on leaving.

    IotunerError (one line) when this host has no memory cgroup to make, or refuses it.
    """
    found = backend()
    if found is None:
        raise IotunerError(
            "no memory cgroup here (cgroup v1 memory or v2 memory controller): a trial cannot "
            "be given production's page-cache size; use --cache-memory only where one exists"
        )
    version, root = found
    remove_stale(root)
    path = root / f"{PREFIX}{os.getpid()}-{next(_counter)}"
    try:
        if version == 2:
            _enable_memory(root)
        path.mkdir(mode=0o755)
        limit_file = "memory.limit_in_bytes" if version == 1 else "memory.max"
        (path / limit_file).write_text(str(limit_bytes))
    except OSError as err:
        _remove(path)
        raise IotunerError(
            f"cannot make the trial's memory cgroup {path}: {err.strerror}"
        ) from None
    try:
        yield MemoryCap(path, version, limit_bytes)
    finally:
        _remove(path)


def remove_stale(root: Path = V1_ROOT) -> list[Path]:
    """Remove trial cgroups whose iotuner process is gone (a kill -9 mid-trial); the paths."""
    removed = []
    with contextlib.suppress(OSError):
        for path in root.glob(f"{PREFIX}*"):
            pid = path.name.removeprefix(PREFIX).split("-", 1)[0]
            if digits(pid) and not Path(f"/proc/{pid}").exists() and _remove(path):
                removed.append(path)
    return removed


def _remove(path: Path) -> bool:
    """rmdir a cgroup once its processes are gone (fio's job processes may still be exiting);
    its charged pages go to the parent. True when it is gone."""
    for _ in range(50):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.1)
    return False


def _enable_memory(root: Path) -> None:
    control = root / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        control.write_text("+memory")


def _stat(path: Path) -> dict[str, int]:
    values: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            name, _, number = line.partition(" ")
            if digits(number.strip()):
                values[name] = int(number)
    return values


class CacheHold:
    """Holds a cgroup's page cache at `cache_bytes` whatever fio itself uses, and records the
    most page cache it held (`peak`).

    A fixed limit of cache plus an allowance for fio lets the cache take whatever fio leaves
    unused: measured on the lab, fio held 8 MiB of a 48 MiB allowance, so a reader told
    "production caches 25 %" cached 40 %. Every `interval_s` the limit becomes `cache_bytes`
    plus the cgroup's memory that is not page cache (fio's anonymous and shared pages) plus
    `headroom_bytes`, never above the limit the cgroup was made with (which keeps fio's own
    allocations from meeting the OOM killer before the first sample).
    """

    def __init__(
        self, cap: MemoryCap, cache_bytes: int, headroom_bytes: int, interval_s: float = 0.05
    ) -> None:
        self.cap = cap
        self.cache_bytes = cache_bytes
        self.headroom_bytes = headroom_bytes
        self.interval_s = interval_s
        self.peak = 0
        self._peak_lock = threading.Lock()  # a sample in flight must not outlive restart_peak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memcap", daemon=True)

    def __enter__(self) -> CacheHold:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.cap.file_bytes())

    def restart_peak(self) -> None:
        """Forget the peak so far: a warm-up's first burst may pass `cache_bytes` before the
        first sample lowers the limit (it reads at memory speed under the cgroup's ceiling),
        and the trial's own peak is what the samples from now on find."""
        with self._peak_lock:
            self.peak = 0

    def hold(self) -> None:
        """One step: the limit for the cgroup's memory now; the file peak so far."""
        with self._peak_lock:
            cached = self.cap.file_bytes()
            self.peak = max(self.peak, cached)
        used = self.cap.usage_bytes()
        if used is None:
            return
        other = max(used - cached, 0)
        self.cap.set_limit(min(self.cache_bytes + other + self.headroom_bytes,
                               self.cap.limit_bytes))  # fmt: skip

    def _run(self) -> None:
        while True:
            self.hold()
            if self._stop.wait(self.interval_s):
                return
