"""A fio job reproducing a fingerprint's busiest device: one job section a process group.

Each process group over MIN_SHARE of the device's requests or bytes is a section of its own
(`sections`; kblockd's workers, which send the flushes others ask for, are none), whose
numjobs= copies stand for its concurrent streams, each in its own slice of the section's
region, as separate files or parts of a disk are. `capture --check` runs the sections side by
side; a trial runs one (tuner/trials/jobcheck.py), the busiest group's (`job_text(one=True)`).
How each of a group's figures maps (docs/capture.md):

- request sizes: bssplit= from the read and write size histograms (power-of-two buckets of at
  least MIN_SHARE of the requests);
- read/write mix: rwmixread= from the share of requests that read;
- sequential or random: rw=read/write/rw when most requests continue a stream, randread/
  randwrite/randrw otherwise, with percentage_random= for the part that does not;
- streams: numjobs= the mean number of concurrent streams (sequential); for random buffered
  I/O, whose synchronous callers have one request in flight each, the mean queue depth
  rounded up (the fewest such callers that can keep it);
- queue depth: libaio's iodepth= the mean in flight per job for direct I/O; a device idle
  part of the time (mean depth under 1) is paced with rate_iops= the captured rate (rate= the
  captured bytes for buffered I/O) and its bursts' depth (the 95th percentile);
- flushes: fdatasync= the writes between cache flushes (the block layer sees a flush, not
  which call asked for it; fsync and fdatasync send the same flush on a file's data);
- buffered or direct: reads the kernel flagged readahead are buffered reads (psync, direct=0,
  bs= the smallest common read size: the device sees the readahead window either way; writes
  beside them keep their own size histogram, bssplit=READ,WRITES;
  fadvise_hint= as the application advised, see `_advice`); other
  reads were page cache misses or direct reads and are reproduced as direct reads, which reach
  the device the same way; writes without the sync flag are buffered (writeback);
- footprint: size= the captured footprint, at most the trial's region.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tuner.capture.fingerprint import Fingerprint
from tuner.errors import BadInput
from tuner.trials.fio import fio_size

MIN_SHARE = 0.02
"""A size bucket under this share of a direction's requests is folded into its neighbours."""
SEQUENTIAL = 0.5
MAX_JOBS = 64
MAX_SECTIONS = 8
"""At most this many process groups get a job section of their own (the busiest by bytes)."""


def _split(shares: Mapping[str, float], mean: float | None = None) -> str:
    """fio's bssplit for one direction's size histogram (power-of-two buckets, each named by
    its lower bound), each bucket's size moved up within its bucket so the split's mean is
    the captured `mean` (`_within`)."""
    kept = {int(k): v for k, v in shares.items() if v >= MIN_SHARE}
    if not kept and not any(shares.values()):
        return "4k/100"  # no size recorded for this direction: fio's default block
    if not kept:
        kept = {int(max(shares, key=lambda k: shares[k])): 1.0}
    total = sum(kept.values())
    kept = _within({k: v / total for k, v in kept.items()}, mean)
    percents = {k: max(1, round(100 * v)) for k, v in sorted(kept.items())}
    # whole percents summing to 100: the largest bucket takes the rounding
    largest = max(percents, key=lambda k: percents[k])
    percents[largest] += 100 - sum(percents.values())
    return ":".join(f"{_size(k)}/{p}" for k, p in percents.items())


ALIGN = 4096
"""Sizes a reproduction moves within their bucket stay multiples of this: a page, and every
logical block size a direct job must align to."""


def _within(shares: Mapping[int, float], mean: float | None) -> dict[int, float]:
    """`shares` (bucket lower bound: share) with each size scaled by the captured `mean`
    over the histogram's own mean, within its bucket and in whole ALIGN units. A histogram's
    lower bounds understate every request between two powers of two: PostgreSQL's WAL writes
    of 24 and 40-56 KiB counted as 16 and 32 KiB, a mean of 21 KiB for the 30 KiB captured,
    and the reproduction wrote 30 % fewer bytes. Unchanged without a mean, below the
    histogram's, or for buckets under ALIGN (sizes a direction rarely has)."""
    floor = sum(size * share for size, share in shares.items())
    if not mean or floor <= 0 or mean <= floor:
        return dict(shares)
    scale = min(mean / floor, 2.0)
    out: dict[int, float] = {}
    for size, share in shares.items():
        moved = size
        if size >= ALIGN:
            moved = min(round(size * scale / ALIGN) * ALIGN, 2 * size - ALIGN)
        out[max(moved, size)] = out.get(max(moved, size), 0.0) + share
    return out


def _size(n: int) -> str:
    for unit, shift in (("m", 20), ("k", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(max(512, n))


def options(found: Fingerprint, region_bytes: int | None = None) -> dict[str, str]:
    """fio options reproducing the fingerprint's busiest device as one mixture (what a trial's
    one job section runs); BadInput when it saw none."""
    dev = _busiest(found)
    return figures_options(dev, region_bytes, dev.get("read_ahead_kb"))


ADVISED = 1.5
"""Readahead windows at least this many times the device's read_ahead_kb: the reader advised
sequential access (POSIX_FADV_SEQUENTIAL doubles its window; sha256sum and fio do it, tar
and cp do not)."""


def _advice(figures: Mapping[str, Any], sequential: bool, read_ahead_kb: int | None) -> str:
    """fio's fadvise_hint for a buffered job: "sequential" where the captured readahead
    windows were twice the device's readahead (the reader advised it), else "0": fio's default
    (1) advises sequential or random by the job's pattern, which doubles a sequential job's
    windows (256 KiB requests where tar's were 128 KiB) and advises a random job random,
    which the application did not."""
    reads = figures["sizes"]["read"]
    if not sequential or not read_ahead_kb or not reads:
        return "0"
    window = int(max(reads, key=lambda k: reads[k]))
    return "sequential" if window >= ADVISED * read_ahead_kb * 1024 else "0"


def _busiest(found: Fingerprint) -> dict[str, Any]:
    dev = found.busiest()
    if dev is None:
        raise BadInput(f"{found.where}: the capture saw no read or write: nothing to reproduce")
    return dev


def figures_options(
    dev: Mapping[str, Any], region_bytes: int | None = None, read_ahead_kb: int | None = None
) -> dict[str, str]:
    """fio options reproducing one device's or one process group's figures (on a device
    whose readahead was `read_ahead_kb` when captured, None when not recorded)."""
    reads = dev["read_request_share"]
    kinds = [k for k, share in (("read", reads), ("write", 1 - reads)) if share > 0]
    sequential = dev["sequential_share"] >= SEQUENTIAL
    jobs = max(1, min(MAX_JOBS, round(dev["streams"]))) if sequential else 1
    buffered_reads = "read" in kinds and dev["cache"]["readahead_share"] >= 0.5
    per_sync = dev["flushes"]["writes_per_sync"]
    # Writeback of a file that fdatasync flushes carries the sync flag too; a direct writer
    # rarely flushes, so sync writes followed by flushes are buffered writes and their syncs.
    buffered_writes = "write" in kinds and (
        dev["cache"]["sync_write_share"] < 0.5 or per_sync is not None
    )
    read_bytes = dev["bytes"] * dev["read_share"]
    buffered = buffered_reads if read_bytes >= dev["bytes"] / 2 else buffered_writes
    out: dict[str, str] = {}
    base = "read" if kinds == ["read"] else "write" if kinds == ["write"] else "rw"
    if sequential:
        out["rw"] = base
    else:
        out["rw"] = {"read": "randread", "write": "randwrite", "rw": "randrw"}[base]
    if base == "rw":
        out["rwmixread"] = str(min(99, max(1, round(100 * reads))))
    random_share = round(100 * (1 - dev["sequential_share"]))
    if not sequential and random_share < 95:
        out["percentage_random"] = str(random_share)
    bs = 4096
    if buffered:
        out["ioengine"] = "psync"
        out["direct"] = "0"
        sizes = [int(k) for k, v in dev["sizes"]["read" if buffered_reads else "write"].items()
                 if v >= MIN_SHARE] or [4096]  # fmt: skip
        bs = min(min(sizes), 128 * 1024)
        out["bs"] = _size(bs)
        if buffered_reads and "write" in kinds:
            # The writes keep their own sizes (fio's bssplit=READS,WRITES): a database's WAL
            # appends of 16-32 KiB beside its 8 KiB page reads wrote half the bytes at the
            # reads' size (pgbench TPC-B-like: read share 0.72 for the backends' 0.44).
            del out["bs"]
            mean = dev["mean_size"]["write"]
            out["bssplit"] = f"{_size(bs)}/100,{_split(dev['sizes']['write'], mean)}"
        out["fadvise_hint"] = _advice(dev, buffered_reads and sequential, read_ahead_kb)
        if dev["queue_depth"]["mean"] < 1 and dev["mbps"] > 0:
            # Idle part of the time: paced in bytes, which readahead and writeback keep.
            rates = [max(1, round(dev["mbps"] * 1e6 * share / jobs))
                     for share in (dev["read_share"], 1 - dev["read_share"])]  # fmt: skip
            out["rate"] = str(rates[0]) if base == "read" else (
                f"{rates[0]},{rates[1]}" if base == "rw" else f"0,{rates[1]}")  # fmt: skip
    else:
        out["ioengine"] = "libaio"
        out["direct"] = "1"
        splits = [_split(dev["sizes"][k], dev["mean_size"][k]) if k in kinds else "4k/100"
                  for k in ("read", "write")]  # fmt: skip
        out["bssplit"] = splits[0] if kinds == ["read"] else ",".join(splits)
        depth = dev["queue_depth"]["mean"]
        out["iodepth"] = str(max(1, min(4096, round(depth / jobs))))
        if depth < 1 and dev["iops"] > 0:
            # A device idle part of the time: pace it, or the reproduction keeps it busy; a
            # paced job's requests come in bursts as deep as the workload's (its 95th
            # percentile depth), and Little's law gives the mean from the device's service.
            out["iodepth"] = str(max(1, min(4096, round(dev["queue_depth"]["p95"] / jobs))))
            # fio paces reads and writes apart (rate_iops=READ,WRITE).
            rates = [max(1, round(dev["iops"] * share / jobs)) for share in (reads, 1 - reads)]
            out["rate_iops"] = (
                str(rates[0])
                if base == "read"
                else (f"{rates[0]},{rates[1]}" if base == "rw" else f"0,{rates[1]}")
            )
    if buffered and not sequential:
        # A synchronous buffered reader or writer has one request in flight at a time: the
        # mean depth is how many of them there were (pgbench's clients, a database's
        # backends). Direct I/O reaches its depth with libaio's iodepth instead. Rounded up:
        # callers each with at most one request in flight keep a mean depth of 3.02 only if
        # there are at least four of them (three kept 2.1 for pgbench TPC-B-like's 3.0).
        jobs = max(1, min(MAX_JOBS, math.ceil(dev["queue_depth"]["mean"])))
        if "rate" in out and jobs > 1:
            out["rate"] = ",".join(str(max(1, int(r) // jobs)) if r != "0" else r
                                   for r in out["rate"].split(","))  # fmt: skip
    if jobs > 1:
        out["numjobs"] = str(jobs)
    if "write" in kinds and per_sync is not None:
        # fio counts its own writes between syncs: the bytes the device got per flush, in
        # the job's writes (merged writeback of small writes is one device request).
        write_bytes = per_sync * dev["mean_size"]["write"]
        size = bs if "bs" in out else dev["mean_size"]["write"] or 1  # the job's mean write
        out["fdatasync"] = str(max(1, round(write_bytes / size / jobs)))
    if region_bytes is not None and dev["footprint_bytes"]:
        out["size"] = _size(max(1 << 20, min(region_bytes, dev["footprint_bytes"])) >> 20 << 20)
    return out


@dataclass(frozen=True)
class Section:
    """One job section of a reproduction: its name, its fio options (size= its footprint,
    within its part of the region) and the process group it stands for."""

    name: str
    options: Mapping[str, str]
    comm: str
    bytes: int
    requests: int


def sections(found: Fingerprint, region_bytes: int | None = None) -> list[Section]:
    """The reproduction of the busiest device as one job section a process group.

    A device's figures mix its groups: four readers' 128 KiB windows and a file system log's
    small flushed writes become one job whose every reader writes and syncs. Each group that
    issued at least MIN_SHARE of the device's requests or bytes is its own section, with its
    own sizes, mix, streams, depth, pacing and flushes; smaller ones are left out (they are
    named in the job's comment): a log's three flushed writes beside four readers' 6,000
    windows are not a writer in every reader. A device of one group, or of none above the
    share, is one section of the device's figures. The sections share `region_bytes` by
    footprint.
    """
    dev = _busiest(found)
    groups = [
        g
        for g in _with_dispatched_syncs(dev["by_process"])
        if g["requests"]
        and (g["requests"] >= MIN_SHARE * dev["requests"] or g["bytes"] >= MIN_SHARE * dev["bytes"])
    ]
    groups = groups[:MAX_SECTIONS]
    if len(dev["by_process"]) < 2 or not groups:
        return [Section("capture", figures_options(dev, region_bytes, dev.get("read_ahead_kb")),
                        "", dev["bytes"], dev["requests"])]  # fmt: skip
    regions = _regions([g["footprint_bytes"] for g in groups], region_bytes)
    out: list[Section] = []
    for group, region in zip(groups, regions, strict=True):
        name = _section_name(group["comm"], {s.name for s in out})
        found_options = figures_options(group, region, dev.get("read_ahead_kb"))
        out.append(Section(name, found_options, group["comm"], group["bytes"],
                           group["requests"]))  # fmt: skip
    return out


DISPATCHER = re.compile(r"kworker/u?[0-9]+(:[0-9]+)?H")
"""The block layer's own high-priority workers (kblockd): they issue the cache flushes an
fsync or a journal commit asks for, and the requeued parts of flushed writes, on behalf of
the task that asked. Not a workload of their own."""


def _syncs(group: Mapping[str, Any]) -> float:
    """Requests of `group` that flushed or were FUA (a flush request counts once: the
    capture counts it under both flush and preflush)."""
    flushes = group["flushes"]
    if flushes["writes_per_sync"]:
        return float(group["requests"] * (1 - group["read_request_share"])) / float(
            flushes["writes_per_sync"]
        )
    return float(max(flushes["flush"], flushes["preflush"]) + flushes["fua"])


def _with_dispatched_syncs(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The groups without the block layer's dispatchers, whose flushes go to the groups that
    wrote with the sync flag (fsync, fdatasync, O_DSYNC, a journal's commits), in proportion
    to their synced writes and at most one a synced write: the flush an fdatasync sends is
    issued by a kblockd worker, and without this the writer's section would never sync and a
    dispatcher's would sync others' writes. Flushes no writer takes are left out with their
    dispatcher (named in the job's comment)."""
    own = [g for g in groups if not DISPATCHER.fullmatch(g["comm"])]
    moved = sum(_syncs(g) for g in groups if DISPATCHER.fullmatch(g["comm"]))
    synced = {id(g): g["requests"] * (1 - g["read_request_share"]) * g["cache"]["sync_write_share"]
              for g in own}  # fmt: skip
    total = sum(synced.values())
    if not moved or not total:
        return own
    out = []
    for g in own:
        writes = g["requests"] * (1 - g["read_request_share"])
        # A flush makes at least one write durable: past one a synced write, the flushes
        # were the file system's own (its log's commits), left out with their dispatcher.
        syncs = _syncs(g) + min(moved * synced[id(g)] / total, synced[id(g)])
        per_sync = round(writes / syncs, 3) if syncs and writes else None
        out.append({**g, "flushes": {**g["flushes"], "writes_per_sync": per_sync}})
    return out


def _regions(footprints: list[int], region_bytes: int | None) -> list[int | None]:
    """Each section's part of the region: its footprint's share, at least 1 MiB."""
    if region_bytes is None:
        return [None] * len(footprints)
    total = sum(footprints) or 1
    scale = min(1.0, region_bytes / total)
    return [max(1 << 20, int(f * scale)) if f else region_bytes // len(footprints)
            for f in footprints]  # fmt: skip


def _section_name(comm: str, taken: set[str]) -> str:
    """A job section name from a process group's comm (fio's and jobcheck's characters)."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", comm).strip("._-") or "group"
    if base.startswith("global"):
        base = "g_" + base  # fio reads any section named global* as [global]
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def job_text(
    found: Fingerprint,
    region_bytes: int | None = None,
    title: str = "",
    *,
    one: bool = False,
    per_job: bool = False,
) -> str:
    """The reproduction as a fio job file: a section a process group (see `sections`), each
    of which passes tuner/trials/jobcheck; `capture --check` runs them side by side. `one`:
    the busiest group's section alone (a trial runs one), the others named as left out.
    `per_job`: size= each job's part of its footprint (fio's own meaning, which sizes a
    tune's scratch data set) rather than the section's whole region (`--check`'s)."""
    dev = _busiest(found)
    parts = sections(found, region_bytes)
    if one and len(parts) > 1:
        parts = parts[:1]
    if per_job:
        parts = [_per_job(part) for part in parts]
    kept = {p.comm for p in parts}
    # one section of the device's figures holds every group
    left = [g for g in dev["by_process"] if g["comm"] not in kept] if parts[0].comm else []
    lines = [f"# iotuner capture: a reproduction of {title or found.where}",
             f"# device {dev['device']} ({dev['class']}), {found.data['seconds']:g} s "
             f"captured, fingerprint schema {found.data['version']}"]  # fmt: skip
    if left:
        share = sum(g["requests"] for g in left) / max(1, dev["requests"])
        names = ", ".join(_printable(g["comm"]) for g in left[:4]) + (
            ", ..." if len(left) > 4 else ""
        )
        lines.append(f"# left out: {len(left)} process groups ({names}): {share:.1%} of the "
                     "requests")  # fmt: skip
    for part in parts:
        if part.comm:
            lines.append(f"# process group {_printable(part.comm)}: "
                         f"{part.requests} requests, {part.bytes} bytes")  # fmt: skip
        lines.append(f"[{part.name}]")
        lines += [f"{key}={value}" for key, value in part.options.items()]
    return "\n".join(lines) + "\n"


def _per_job(part: Section) -> Section:
    """`part` with size= its region over its jobs (whole MiB, at least one)."""
    if "size" not in part.options:
        return part
    jobs = int(part.options.get("numjobs", "1"))
    size = max(1 << 20, fio_size(part.options["size"]) // jobs >> 20 << 20)
    return replace(part, options={**part.options, "size": _size(size)})


def _printable(text: str) -> str:
    return "".join(c if " " <= c <= "~" else "?" for c in text)
