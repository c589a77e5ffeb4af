"""One trial: a workload's fio job on a target, guarded against the page cache, measured."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import BadInput
from tuner.rules.model import Workload
from tuner.topology import Topology
from tuner.trials import pagecache
from tuner.trials.blockdev import cached_below, live_storage, readahead_bytes
from tuner.trials.diskstats import Counters, Sampler
from tuner.trials.fio import (
    AppParams,
    FioResult,
    file_count,
    fio_size,
    invalidates,
    is_buffered,
    job_text,
    numjobs,
    parse_result,
    run_fio,
    trial_options,
    writes,
)
from tuner.trials.safety import exclusive_writes
from tuner.trials.targets import TrialTarget
from tuner.units import human_bytes


@dataclass(frozen=True)
class TrialResult:
    """What a trial measured.

    mbps: read + write MB/s (10^6 bytes) over the runtime; iops; p99_latency_us: completion
    latency (the worse direction); fio_bytes: what fio moved in the runtime (the ramp is left
    out); device_bytes: what the target's devices moved in that same window (/proc/diskstats);
    seconds: wall time of the whole trial; flagged: why the figures may not be the device's,
    or None.
    """

    mbps: float
    iops: float
    p99_latency_us: float | None
    fio_bytes: int
    device_bytes: int
    seconds: float
    flagged: str | None = None


def run_trial(
    target: TrialTarget,
    workload: Workload,
    app: AppParams | None = None,
    runtime_s: float = 5.0,
    ramp_s: float = 1.0,
    *,
    drop_caches: bool = True,
    io_cap_bytes: int | None = None,
) -> TrialResult:
    """Run `workload` (with `app` overriding its application parameters) on `target`.

    BadInput when the workload writes and the target is not writable, or needs files and the
    target is a device. `drop_caches=False` only syncs, leaving the page cache in place and
    the trial unflagged for it: for measuring the guard itself. `io_cap_bytes` is the most
    the trial may move (io_cap_share); a capped trial that ends early reports fio's bytes
    over fio's own time, so its MB/s stay true.
    """
    started = time.monotonic()
    options = trial_options(workload.fio, app)
    placement, region = _placement(target, workload, options)
    timeout = 3 * (runtime_s + ramp_s) + 120  # end_fsync may flush gigabytes of dirty pages
    if file_count(options) > 1:
        # fio lays out a multi-file data set by writing it; do that before the caches drop.
        layout = job_text(options, runtime_s=0, ramp_s=0, create_only=True, **placement)
        run_fio(layout, timeout_s=timeout, what=target.path)
    buffered = is_buffered(options)
    topology = live_storage()
    below = cached_below(target.devices, topology)
    lower = (below[1],) if below is not None else ()
    not_dropped = pagecache.prepare(buffered and drop_caches, target.directory or target.path)
    io_size = (
        None if io_cap_bytes is None else io_cap_share(io_cap_bytes, options, target, topology)
    )
    text = job_text(options, runtime_s=runtime_s, ramp_s=ramp_s, title=workload.name,
                    io_size=io_size, **placement)  # fmt: skip
    device_writes = target.path if writes(options) and not target.is_scratch else None
    with exclusive_writes(device_writes), Sampler((*target.devices, *lower)) as sampler:
        doc = run_fio(text, timeout_s=timeout, what=target.path)
    fio = parse_result(doc)
    start, end = _window(doc, fio.runtime_s, sampler)
    moved = sampler.between(start, end, target.devices)
    reasons = [
        # A capped trial may end before its runtime by design: not a data set read through.
        _against_fio(options, fio, moved, region, runtime_s if io_size is None else 0.0),
        pagecache.compare_below(moved, sampler.between(start, end, lower), *below)
        if below is not None
        else None,
        _rereads(target, options, fio, sampler, start, region, topology)
        if buffered and fio.read_bytes
        else None,
        not_dropped,
        _cut_short(fio.runtime_s, runtime_s) if io_size is not None else None,
    ]
    flagged = "; ".join(reason for reason in reasons if reason) or None
    return TrialResult(
        mbps=fio.mbps,
        iops=fio.iops,
        p99_latency_us=fio.p99_latency_us,
        fio_bytes=fio.read_bytes + fio.write_bytes,
        device_bytes=moved.read_bytes + moved.write_bytes,
        seconds=time.monotonic() - started,
        flagged=flagged,
    )


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
        window = readahead_bytes(target.devices, topology, _path_for_bdi(target))
        budget = max(cap_bytes - 4 * window, cap_bytes // 4)
    share = budget // numjobs(options)
    try:
        block = fio_size(options.get("bs", 4096))
    except ValueError:  # "4k-64k", "64k,4k": no one block size to round to
        block = 1
    return max(share // block * block, block)


def _cut_short(measured_s: float, runtime_s: float) -> str | None:
    """Why a capped trial's figure may not be the steady state: the cap ended it in less than
    half its runtime (or in the ramp, whose start fio then counts)."""
    if measured_s >= runtime_s / 2:
        return None
    return (
        f"the I/O cap ended it after {measured_s:.2f} s of the {runtime_s:g} s runtime: "
        "a short measurement"
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
        region = files * fio_size(options["filesize"]) * numjobs(options)
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


def _against_fio(
    options: dict[str, Any], fio: FioResult, moved: Counters, region: int, runtime_s: float
) -> str | None:
    """The device's bytes in fio's window against fio's (pagecache.compare)."""
    if file_count(options) > 1 and fio.runtime_s < runtime_s / 2:
        # One pass over the files (no time_based there) ended early, maybe within the ramp,
        # where fio's figures mix ramp and runtime: nothing to compare them with.
        return (
            f"data set {human_bytes(region)} read through in {fio.runtime_s:.1f} s of the "
            f"{runtime_s:g} s runtime: too small to measure"
        )
    return pagecache.compare(Counters(fio.read_bytes, fio.write_bytes), moved)


def _rereads(
    target: TrialTarget,
    options: dict[str, Any],
    fio: FioResult,
    sampler: Sampler,
    start: float,
    region: int,
    topology: Topology,
) -> str | None:
    """Why a buffered read trial may have re-read its data from memory (pagecache.wrapped).

    Only where fio was told to keep cached pages between passes (invalidate=0); otherwise fio
    drops the target's pages before each pass. What fio read in the ramp is what the device
    read then: nothing was cached yet.
    """
    if invalidates(options):
        return None
    ramp = sampler.between(sampler.times[0], start, target.devices)
    window = readahead_bytes(target.devices, topology, _path_for_bdi(target))
    return pagecache.wrapped(fio.read_bytes + ramp.read_bytes, window, region)


def _window(doc: dict[str, Any], runtime_s: float, sampler: Sampler) -> tuple[float, float]:
    """fio's measurement window in wall-clock seconds: the runtime before its report time
    (`timestamp_ms`, written as the jobs end); the whole run when fio gives no time."""
    stamp = doc.get("timestamp_ms")
    if not isinstance(stamp, int | float) or runtime_s <= 0:
        return sampler.times[0], sampler.times[-1]
    end = min(stamp / 1000, sampler.times[-1])
    return max(end - runtime_s, sampler.times[0]), end


def _path_for_bdi(target: TrialTarget) -> Path | None:
    return Path(target.path) if target.is_scratch else None
