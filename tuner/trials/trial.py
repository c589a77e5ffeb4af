"""One trial: a workload's fio job on a target, guarded against the page cache, measured."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probes.host_root import live_host
from tuner.errors import BadInput, IotunerError
from tuner.rules.model import Workload
from tuner.topology.model import Topology
from tuner.trials import pagecache
from tuner.trials.blockdev import cached_below, live_storage, readahead_bytes
from tuner.trials.dataset import CacheModel
from tuner.trials.diskstats import Counters, Sampler
from tuner.trials.faults import os_faults
from tuner.trials.fio import (
    AppParams,
    FioResult,
    count,
    escape_path,
    file_count,
    fio_size,
    invalidates,
    is_buffered,
    is_random,
    job_comment,
    job_text,
    largest_size,
    numjobs,
    one_pass,
    parse_result,
    reads,
    run_fio,
    trial_options,
    writes,
)
from tuner.trials.flags import CUT_SHORT, DATA_SET, OUT_OF_MEMORY, Flag, joined
from tuner.trials.memcap import FIO_OVERHEAD_BYTES, CacheHold, MemoryCap, memory_cap
from tuner.trials.placement import check_placement
from tuner.trials.safety import exclusive_writes
from tuner.trials.settle import MAX_SETTLE_S, MIN_SETTLE_S, needed_ramp, unsettled
from tuner.trials.steady import (
    MAX_CEILING_S,
    WindowBounds,
    attained,
    floor_s,
    in_flight_bytes,
    ss_options,
    window_bounds,
)
from tuner.trials.steady import unsettled as not_steady
from tuner.trials.targets import TrialTarget
from tuner.units import human_bytes


@dataclass(frozen=True)
class TrialResult:
    """What a trial measured.

    mbps: read + write MB/s (10^6 bytes) over the runtime; iops; p99_latency_us: completion
    latency (the worse direction); fio_bytes: what fio moved in the runtime (the ramp is left
    out); device_bytes: what the target's devices moved in that same window (/proc/diskstats);
    seconds: wall time of the whole trial; flags: why the figures may not be the device's
    (tuner/trials/flags.py), empty when they are; cache_limit_bytes: the page cache the trial
    could use (its memory cgroup's share of its data set), None when unlimited;
    cache_peak_bytes: the most page cache that cgroup held; ramp_s: the ramp the window
    followed (a capped random reader's is lengthened until its cache settles: settle.py);
    measured_s: fio's window (its runtime after the ramp); settled: whether fio's
    steady-state test ended it (None: the trial ran without one, as a buffered writer's single
    pass or an --io-cap trial); length: the floor and ceiling it was given, and why (steady.py);
    ahead_bytes: what a buffered sequential reader's streams may hold read ahead when the
    window closes (steady.in_flight_bytes; 0 for other workloads).
    """

    mbps: float
    iops: float
    p99_latency_us: float | None
    fio_bytes: int
    device_bytes: int
    seconds: float
    flags: tuple[Flag, ...] = ()
    cache_limit_bytes: int | None = None
    cache_peak_bytes: int | None = None
    ramp_s: float = 0.0
    measured_s: float = 0.0
    settled: bool | None = None
    length: WindowBounds | None = None
    ahead_bytes: int = 0

    @property
    def flagged(self) -> str | None:
        """The flags' messages in one line, None when the figures are the device's."""
        return joined(self.flags)

    @property
    def amplification(self) -> float | None:
        """What the device moved per byte the application got (readahead it did not use
        makes it larger than 1, cache hits smaller); None when fio moved nothing."""
        return self.device_bytes / self.fio_bytes if self.fio_bytes else None


MIN_WINDOW_S = 0.25
"""The shortest measurement window whose device bytes are compared with fio's (diskstats are
sampled every 20 ms: shorter, the window's edges are off by more than the bytes in it)."""
# A capped trial's limit sits this far above page cache + fio's measured own memory, so a
# burst of fio's allocations between two CacheHold samples reclaims cache, not fio.
HEADROOM = 4 << 20
# A capped random reader's warm-up reads this much past the cache's size, so it ends full.
WARM_BEYOND = 16 << 20
# Laying out one small file, at worst: its data (and, amortised, its inode and directory
# entry) written back as one random write on a 5400 rpm disk, a full-stroke seek (~14 ms) and
# half a rotation (5.6 ms). The layout runs without fio's fsync after each file
# (create_fsync=0; the sync before the trial writes them back together): with it, unseen
# draw 2's 8192 files of 16 KiB on a RAID-5 of 10k rpm disks took 279 s (34 ms a file: a log
# force and a read-modify-write of a stripe each) and stalled its baseline at 144 s;
# without it, 31 s (3.8 ms a file).
LAYOUT_FILE_S = 0.020


def layout_seconds(options: Mapping[str, Any]) -> float:
    """The most laying out a multi-file data set may take beyond a trial's own timeout: each
    file one random write (LAYOUT_FILE_S) on the slowest disk a trial may meet."""
    return numjobs(options) * file_count(options) * LAYOUT_FILE_S


def run_trial(
    target: TrialTarget,
    workload: Workload,
    app: AppParams | None = None,
    runtime_s: float = 5.0,
    ramp_s: float = 1.0,
    *,
    drop_caches: bool = True,
    io_cap_bytes: int | None = None,
    cache: CacheModel | None = None,
    ceiling_s: float | None = None,
) -> TrialResult:
    """Run `workload` (with `app` overriding its application parameters) on `target`.

    BadInput when the workload writes and the target is not writable, or needs files and the
    target is a device. `drop_caches=False` only syncs, leaving the page cache in place and
    the trial unflagged for it: for measuring the guard itself. `io_cap_bytes` is the most
    the trial may move (io_cap_share); a capped trial that ends early reports fio's bytes
    over fio's own time, so its MB/s stay true. `cache`: production's data set and page
    cache; a buffered reader whose data set production cannot cache whole runs in a memory
    cgroup holding the same share of the trial's data (dataset.py, memcap.py); a point the
    kernel kills fio for in that cgroup comes back set aside (flagged out-of-memory), no figures.

    `runtime_s` and `ramp_s` are floors: a time-based trial runs until fio's steady-state test
    passes, at least as long as every buffered sequential stream needs to consume several
    readahead windows at the device's rate (steady.py; a first run that measured the rate
    short of that runs again with the floor it says), at most `ceiling_s` (default: a few
    times the floor); one that reached the ceiling unsettled is flagged.
    """
    started = time.monotonic()
    options = trial_options(workload.fio, app)
    placement, region = _placement(target, workload, options)
    topology = live_storage(live_host())
    streams, ahead = numjobs(options), _sequential_readahead(options, target, topology)
    length = window_bounds(runtime_s, ramp_s, streams=streams, readahead=ahead,
                          ceiling_s=ceiling_s)  # fmt: skip
    timeout = 3 * (length.ceiling_s + ramp_s) + 120  # end_fsync may flush gigabytes of dirty pages
    if file_count(options) > 1:
        # fio lays out a multi-file data set by writing it; do that before the caches drop
        # (pagecache.prepare syncs it). Once a tune: later trials find the files laid out.
        layout = job_text({**options, "create_fsync": 0}, runtime_s=0, ramp_s=0,
                          create_only=True, **placement)  # fmt: skip
        run_fio(layout, timeout_s=timeout + layout_seconds(options), what=target.path,
                devices=target.devices, may_write=True)  # fmt: skip
    buffered = is_buffered(options)
    limit, cached_share = _cache_share(cache, options, region)
    below = cached_below(target.devices, topology)
    lower = (below[1],) if below is not None else ()
    with os_faults(target.path, target.devices):
        not_dropped = pagecache.prepare(buffered and drop_caches, target.directory or target.path)
    io_size = (
        None if io_cap_bytes is None else io_cap_share(io_cap_bytes, options, target, topology)
    )
    # A capped random reader's window waits until the device has read this much: its cache
    # (settle.py).
    settle_bytes = limit if limit is not None and is_random(options) else None
    device_writes = target.path if writes(options) and not target.is_scratch else None
    # fio's steady-state test needs a time-based job: not a buffered writer's single pass, an
    # --io-cap trial, one over many files, nor a capped random reader (its own settling).
    steady = ("filename" in placement and io_size is None and settle_bytes is None
              and not (writes(options) and buffered) and length.judged)  # fmt: skip
    try:
        with ExitStack() as stack:
            cap, hold = None, None
            if limit is not None:
                cap = stack.enter_context(memory_cap(limit + _fio_overhead(options)))
                stack.enter_context(_killed_for_memory(cap, limit))
                hold = stack.enter_context(CacheHold(cap, limit, _io_buffers(options) + HEADROOM))
            if cap is not None and settle_bytes is not None:
                # A full cache first: the ramp then only has to turn it over, not fill it.
                _warm_up(target, workload, min(settle_bytes + WARM_BEYOND, region), cap, timeout)
                if hold is not None:
                    hold.restart_peak()
                ramp_s = max(ramp_s, MIN_SETTLE_S)
            stack.enter_context(os_faults(target.path, target.devices))
            stack.enter_context(exclusive_writes(device_writes))
            not_settled = None
            for again in (False, True):
                job = {**options, **ss_options(length)} if steady else options
                text = job_text(job, ramp_s=ramp_s, title=workload.name, io_size=io_size,
                                runtime_s=length.ceiling_s if steady else runtime_s,
                                keep_cache=settle_bytes is not None, **placement)  # fmt: skip
                dropped_before = pagecache.drops()
                with Sampler((*target.devices, *lower)) as sampler:
                    doc = run_fio(text, timeout_s=3 * (length.ceiling_s + ramp_s) + 120,
                                  preexec=cap.joiner() if cap is not None else None,
                                  what=target.path, devices=target.devices,
                                  may_write=writes(options))  # fmt: skip
                fio = parse_result(doc)
                dropped = dropped_before is not None and pagecache.drops() != dropped_before
                left_out = ramp_left_out(options, ramp_s, fio, io_size)
                start, end = measured_window(doc, fio.runtime_s, sampler, left_out, target.devices,
                                             reads_only=not writes(options))  # fmt: skip
                moved = sampler.between(start, end, target.devices)
                if settle_bytes is None:
                    longer_length = _physics_floor(length, streams, ahead, moved, end - start)
                    if not steady or again or longer_length is None:
                        break
                    length = longer_length
                    continue
                ramp_read = sampler.between(sampler.times[0], start, target.devices).read_bytes
                longer = needed_ramp(settle_bytes, ramp_read, start - sampler.times[0],
                                     moved.read_bytes, end - start, fio.read_bytes)  # fmt: skip
                not_settled = None if longer is None else unsettled(settle_bytes, ramp_read, ramp_s)
                if longer is None or again or longer > MAX_SETTLE_S:
                    break
                ramp_s = longer
    except KilledForMemory as killed:
        return TrialResult(mbps=0.0, iops=0.0, p99_latency_us=None, fio_bytes=0, device_bytes=0,
                           seconds=time.monotonic() - started, flags=(killed.flag,),
                           cache_limit_bytes=limit, ramp_s=ramp_s)  # fmt: skip
    # A capped trial may end before its runtime by design: not a data set read through.
    full_runtime = runtime_s if io_size is None else 0.0
    settled = attained(doc) if steady else None
    in_flight = in_flight_bytes(streams, ahead)
    found = [
        _against_fio(options, fio, moved, region, full_runtime, cached_share, in_flight, dropped),
        pagecache.compare_below(moved, sampler.between(start, end, lower), *below)
        if below is not None
        else None,
        _rereads(target, options, fio, sampler, start, region, topology)
        if buffered and fio.read_bytes and cached_share == 0
        else None,
        not_dropped,
        _cut_short(fio.runtime_s, runtime_s) if io_size is not None else None,
        not_settled,
        not_steady(length, fio.runtime_s) if settled is False else None,
    ]
    return TrialResult(
        mbps=fio.mbps,
        iops=fio.iops,
        p99_latency_us=fio.p99_latency_us,
        fio_bytes=fio.read_bytes + fio.write_bytes,
        device_bytes=moved.read_bytes + moved.write_bytes,
        seconds=time.monotonic() - started,
        flags=tuple(flag for flag in found if flag is not None),
        cache_limit_bytes=limit,
        cache_peak_bytes=hold.peak if hold is not None else None,
        ramp_s=ramp_s,
        measured_s=fio.runtime_s,
        settled=settled,
        length=length,
        ahead_bytes=in_flight,
    )


def _sequential_readahead(options: dict[str, Any], target: TrialTarget, topology: Topology) -> int:
    """The readahead window (bytes) of a buffered sequential reader's target, 0 for other
    workloads (their trial length does not depend on it)."""
    if not (is_buffered(options) and reads(options)) or is_random(options):
        return 0
    return readahead_bytes(live_host(), target.devices, topology, _path_for_bdi(target))


def _physics_floor(
    length: WindowBounds, streams: int, readahead: int, moved: Counters, window_s: float
) -> WindowBounds | None:
    """The longer length a trial needs when, at the device rate it measured, its streams did
    not consume steady.WINDOWS readahead windows each within the floor it ran with; None
    when they did (or the workload reads no readahead)."""
    if window_s <= 0 or readahead <= 0:
        return None
    needed = floor_s(streams, readahead, moved.read_bytes / window_s)
    # Some slack: the rate of a rerun differs by a few percent. Beyond the longest window a
    # trial may have, no rerun: the first is judged as it ran (a 54 MiB window on six streams
    # at 4 MB/s would need a minute; the readahead guard judges what it read).
    if needed <= 1.1 * length.floor_s or needed > max(length.ceiling_s, MAX_CEILING_S):
        return None
    return window_bounds(length.floor_s, length.ramp_s, streams=streams, readahead=readahead,
                        rate_bytes_s=moved.read_bytes / window_s,
                        ceiling_s=max(length.ceiling_s, needed))  # fmt: skip


def _warm_up(
    target: TrialTarget, workload: Workload, size: int, cap: MemoryCap, timeout: float
) -> None:
    """Fill the trial's cgroup with as much of its data as production's cache holds, so a
    random reader is measured as production runs, with a full cache (about the cgroup's
    share of reads hits), not during the minutes a cold cache takes to fill at 4 KiB a read.

    One sequential pass of `size` bytes from the region's start: for uniformly random reads
    which pages are cached does not matter, only how many; a sequential pass fills it at the
    device's streaming rate.
    """
    start = str(workload.region.get("offset", 0)) if reads_own_region(target, workload) else "0"
    text = "\n".join([
        job_comment("warm-up"), "[global]", f"filename={escape_path(target.path)}",
        "rw=read", "bs=1M", "ioengine=psync", "direct=0", "invalidate=0",
        f"offset={start}", f"size={size}", "[warm]",
    ]) + "\n"  # fmt: skip
    run_fio(text, timeout_s=timeout, what=target.path, preexec=cap.joiner(), devices=target.devices)


class KilledForMemory(Exception):
    """fio (the trial's or its warm-up's) was killed for memory in the trial's cgroup."""

    def __init__(self, flag: Flag) -> None:
        super().__init__(flag.message)
        self.flag = flag


@contextmanager
def _killed_for_memory(cap: MemoryCap, cache_bytes: int) -> Iterator[None]:
    """Turns fio's failure into KilledForMemory when the kernel killed it for memory in `cap`
    (fio then fails with no message of its own): the point's reads at once (readahead, fio's
    buffers) did not fit beside production's cache share, which says nothing of the device.
    Entered after the cgroup, so its count is read before the cgroup is removed."""
    try:
        yield
    except IotunerError:
        if not cap.oom_kills():
            raise
        raise KilledForMemory(
            Flag(
                OUT_OF_MEMORY,
                f"the kernel killed fio for memory in the trial's {human_bytes(cap.limit_bytes)} "
                f"cgroup ({human_bytes(cache_bytes)} of page cache, production's share, and "
                "fio's own): this point reads more at once than that leaves room for",
            )
        ) from None


def _cache_share(
    cache: CacheModel | None, options: dict[str, Any], region: int
) -> tuple[int | None, float]:
    """(the trial's page-cache limit or None, the share of fio's reads memory may serve).

    Only buffered readers cache what they read. Unknown data set: none (each byte is read
    once); one that fits production's cache: all of it (warm-up); otherwise the cgroup's
    share of the trial's data set.
    """
    if cache is None or not (is_buffered(options) and reads(options)):
        return None, 0.0
    if cache.fits:
        return None, 1.0
    limit = cache.limit_for(region)
    if limit is None:
        return None, 0.0
    return limit, min(limit / region, 1.0)


def _fio_overhead(options: dict[str, Any]) -> int:
    """The most of fio's own memory the trial's cgroup allows for: its base plus I/O
    buffers (the cgroup's ceiling; CacheHold keeps the limit at what fio really uses)."""
    return FIO_OVERHEAD_BYTES + _io_buffers(options)


def _io_buffers(options: dict[str, Any]) -> int:
    """fio's I/O buffers: bs x iodepth per job, twice for fio's alignment slack."""
    try:
        block = fio_size(options.get("bs", 4096))
    except ValueError:
        block = 1 << 20
    return 2 * block * count(options, "iodepth") * numjobs(options)


def io_cap_share(
    cap_bytes: int, options: dict[str, Any], target: TrialTarget, topology: Topology
) -> int:
    """fio's io_size (per job, whole blocks) that keeps a trial's device bytes within the cap.

    Buffered reads make the device read ahead of fio: measured on a loop device, up to 2.8,
    3.8 and 2.5 times read_ahead_kb (128, 1024, 4096) beyond fio's bytes. Four windows are left
    out of the cap, down to a quarter of it, so a window above 3/16 of the cap can still carry
    the device's bytes past it. fio rounds io_size up to a whole block: it is given whole
    blocks.
    """
    budget = cap_bytes
    if is_buffered(options) and not writes(options):
        window = readahead_bytes(live_host(), target.devices, topology, _path_for_bdi(target))
        budget = max(cap_bytes - 4 * window, cap_bytes // 4)
    share = budget // numjobs(options)
    try:
        block = fio_size(options.get("bs", 4096))
    except ValueError:  # "4k-64k", "64k,4k": no one block size to round to
        block = 1
    return max(share // block * block, block)


def _cut_short(measured_s: float, runtime_s: float) -> Flag | None:
    """Why a capped trial's figure may not be the steady state: the cap ended it in less than
    half its runtime (or in the ramp, whose start fio then counts)."""
    if measured_s >= runtime_s / 2:
        return None
    return Flag(
        CUT_SHORT,
        f"the I/O cap ended it after {measured_s:.2f} s of the {runtime_s:g} s runtime: "
        "a short measurement",
    )


def _placement(
    target: TrialTarget, workload: Workload, options: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    """job_text's arguments saying where the I/O goes, and the bytes of that data set."""
    if writes(options) and not target.writable:
        rw = options.get("rw", options.get("readwrite"))
        raise BadInput(
            f"{target.path}: workload {workload.name} writes (rw={rw}); writes go only to a "
            "scratch file or to a device named with --destroy-data"
        )
    files = file_count(options)
    if reads_own_region(target, workload):
        # The user's own file, or the part of a device the user's job names, read as the job
        # places its reads (every job from offset 0 of `size` unless the job says otherwise):
        # that is the workload whose speed counts.
        if target.user_file:
            check_placement(workload.region, options, target.size_bytes, target.path)
        region = user_region_bytes(workload, target)
        return {"filename": target.path, "own_region": workload.region}, region
    if files == 1:
        return {"filename": target.path, "region_bytes": target.size_bytes}, target.size_bytes
    if target.directory is None:
        raise BadInput(
            f"{target.path}: workload {workload.name} spreads over {files} files per job; "
            "give a directory on a file system as the target"
        )
    if options.get("filesize") is None:
        raise BadInput(f"workload {workload.name}: nrfiles={files} needs filesize=")
    try:
        region = files * largest_size(options["filesize"]) * numjobs(options)
    except ValueError as err:
        raise BadInput(f"workload {workload.name}: filesize: {err}") from None
    prefix = f"{target.scratch_prefix}.fio"
    laid_out = sum(p.stat().st_size for p in Path(target.directory).glob(f"{prefix}.*"))
    free = shutil.disk_usage(target.directory).free + laid_out
    if region > free:
        raise BadInput(
            f"{target.directory}: workload {workload.name} needs {human_bytes(region)} of "
            f"files, {human_bytes(free)} free"
        )
    return {"directory": target.directory, "file_prefix": prefix}, region


def reads_own_region(target: TrialTarget, workload: Workload) -> bool:
    """True when trials place their I/O as the user's job does: on the user's own file, or on
    a device whose part the user's `--fio-job` names (size, offset, offset_increment).

    Without it a device's trials spread over the whole device: two mmap readers of the first
    256 MiB of a 2 GiB disk were measured over all 2 GiB, with a cache share of that, and the
    tune's baseline could not settle what the user's job settles in seconds."""
    return target.user_file or (not target.is_scratch and bool(workload.region))


def user_region_bytes(workload: Workload, target: TrialTarget) -> int:
    """The bytes of the user's file its jobs read: from `offset` to the end of the last job's
    `size` (each job `offset_increment` further on), capped at the file; `size` and the
    offsets in bytes or as a percentage of the file; the whole file when the job says none."""
    region = workload.region
    file = target.size_bytes
    size = _file_share(workload, "size", region.get("size"), file, default=file)
    offset = _file_share(workload, "offset", region.get("offset"), file, default=0)
    step = _file_share(workload, "offset_increment", region.get("offset_increment"), file,
                       default=0)  # fmt: skip
    end = offset + step * (numjobs(workload.fio) - 1) + size
    return max(min(end, file) - min(offset, file), 1)


def _file_share(workload: Workload, key: str, value: Any, file: int, *, default: int) -> int:
    """A placement option in bytes: "1g", "25%" of the file, or `default` when absent."""
    text = "" if value is None else str(value).strip()
    if not text:
        return default
    try:
        if text.endswith("%"):
            return int(file * float(text[:-1]) / 100)
        return fio_size(text)
    except ValueError:
        raise BadInput(
            f"workload {workload.name}: {key}={text}: not a size iotuner reads"
        ) from None


def _against_fio(
    options: dict[str, Any],
    fio: FioResult,
    moved: Counters,
    region: int,
    runtime_s: float,
    cached_share: float,
    ahead_bytes: int = 0,
    dropped: bool = False,
) -> Flag | None:
    """The device's bytes in fio's window against fio's (pagecache.compare); `ahead_bytes`:
    what the streams may still hold read ahead (steady.in_flight_bytes); `dropped`: someone
    dropped the page cache while fio ran."""
    if file_count(options) > 1 and fio.runtime_s < runtime_s / 2:
        # One pass over the files (no time_based there) ended early, maybe within the ramp,
        # where fio's figures mix ramp and runtime: nothing to compare them with.
        return Flag(
            DATA_SET,
            f"data set {human_bytes(region)} read through in {fio.runtime_s:.1f} s of the "
            f"{runtime_s:g} s runtime: too small to measure",
        )
    if fio.runtime_s < MIN_WINDOW_S:
        # A window of a few 20 ms samples (an --io-cap trial over memory ends in tens of ms):
        # its edges are off by more than the bytes in it; nothing to compare with.
        return None
    return pagecache.compare(
        Counters(fio.read_bytes, fio.write_bytes),
        moved,
        cached_share=cached_share,
        sequential=not is_random(options),
        ahead_bytes=ahead_bytes,
        dropped=dropped,
    )


def _rereads(
    target: TrialTarget,
    options: dict[str, Any],
    fio: FioResult,
    sampler: Sampler,
    start: float,
    region: int,
    topology: Topology,
) -> Flag | None:
    """Why a buffered read trial may have re-read its data from memory (pagecache.wrapped).

    Only where fio was told to keep cached pages between passes (invalidate=0); otherwise fio
    drops the target's pages before each pass. What fio read in the ramp is what the device
    read then: nothing was cached yet.
    """
    if invalidates(options):
        return None
    ramp = sampler.between(sampler.times[0], start, target.devices)
    window = readahead_bytes(live_host(), target.devices, topology, _path_for_bdi(target))
    return pagecache.wrapped(fio.read_bytes + ramp.read_bytes, window, region)


def measured_window(
    doc: dict[str, Any],
    runtime_s: float,
    sampler: Sampler,
    ramp_s: float,
    devices: tuple[str, ...],
    *,
    reads_only: bool = False,
) -> tuple[float, float]:
    """fio's measurement window in wall-clock seconds: its `runtime_s`, ending where fio's
    measured I/O on `devices` ended, not where fio reported.

    fio stamps its report (`timestamp_ms`) only once its jobs have torn down (libaio's
    io_destroy waits for an RCU grace period) and exited: 10-45 ms after the devices' last
    move in seven capped trials at load 9-12. A window ending at the report then leaves the
    run's start out, where a new process reads fastest: a capped direct reader's first
    45 ms held 30% of its bytes, and it was flagged "device moved 70% of fio's bytes: page
    cache". So the window ends where fio's own clock puts it, `ramp_s` (the ramp fio's
    figures leave out) plus `runtime_s` after the devices' first move, or at their last
    move if that is later (fio's clock starts a little before its first I/O; another
    process's I/O moves the devices too), and never after the report. A reader served from
    its cache, whose device goes quiet after the pass that filled it, keeps the window of
    its run: a quiet device never pulls the window back over that pass. The whole run is
    compared when fio gives no time, or when its figures leave no ramp out (there was none,
    or a capped job ended within it): all fio moved is in its figures then. `reads_only`: the
    job only reads, and only the devices' reads place it (a file system's journal writes
    while fio starts are not its I/O)."""
    stamp = doc.get("timestamp_ms")
    if not isinstance(stamp, int | float) or runtime_s <= 0 or ramp_s <= 0:
        return sampler.times[0], sampler.times[-1]
    end = min(stamp / 1000, sampler.times[-1])
    moved = sampler.moving(devices, reads=reads_only)
    if moved is not None:
        first, last = moved
        end = min(end, max(first + ramp_s + runtime_s, last))
    return max(end - runtime_s, sampler.times[0]), end


def ramp_left_out(
    options: dict[str, Any], ramp_s: float, fio: FioResult, io_size: int | None
) -> float:
    """The ramp fio's figures leave out: none for a job that runs one pass without one
    (fio.one_pass) or a capped job that ended within its ramp. fio zeroes its counters when
    the ramp ends, so a job that counted every byte its cap allowed never got past the ramp,
    and its runtime is its whole run."""
    if one_pass(options):
        return 0.0
    if io_size is not None and fio.read_bytes + fio.write_bytes >= io_size * numjobs(options):
        return 0.0
    return ramp_s


def _path_for_bdi(target: TrialTarget) -> Path | None:
    return Path(target.path) if target.through_file_system else None
