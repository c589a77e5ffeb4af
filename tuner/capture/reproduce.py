"""A fio job reproducing a fingerprint's busiest device, as a trial runs it.

A trial runs one job section (tuner/trials/jobcheck.py), so the reproduction is one section
whose numjobs= copies stand for the concurrent streams; the trial gives each copy its own
slice of the trial's region (tuner/trials/fio.py job_text), as separate files or parts of a
disk are. How each figure maps (docs/capture.md):

- request sizes: bssplit= from the read and write size histograms (power-of-two buckets of at
  least MIN_SHARE of the requests);
- read/write mix: rwmixread= from the share of requests that read;
- sequential or random: rw=read/write/rw when most requests continue a stream, randread/
  randwrite/randrw otherwise, with percentage_random= for the part that does not;
- streams: numjobs= the mean number of concurrent streams (sequential); for random buffered
  I/O, whose synchronous callers have one request in flight each, the mean queue depth;
- queue depth: libaio's iodepth= the mean in flight per job for direct I/O; a device idle
  part of the time (mean depth under 1) is paced with rate_iops= the captured rate (rate= the
  captured bytes for buffered I/O) and its bursts' depth (the 95th percentile);
- flushes: fdatasync= the writes between cache flushes (the block layer sees a flush, not
  which call asked for it; fsync and fdatasync send the same flush on a file's data);
- buffered or direct: reads the kernel flagged readahead are buffered reads (psync, direct=0,
  bs= the smallest common read size: the device sees the readahead window either way); other
  reads were page cache misses or direct reads and are reproduced as direct reads, which reach
  the device the same way; writes without the sync flag are buffered (writeback);
- footprint: size= the captured footprint, at most the trial's region.
"""

from __future__ import annotations

from collections.abc import Mapping

from tuner.capture.fingerprint import Fingerprint
from tuner.errors import BadInput

MIN_SHARE = 0.02
"""A size bucket under this share of a direction's requests is folded into its neighbours."""
SEQUENTIAL = 0.5
MAX_JOBS = 64


def _split(shares: Mapping[str, float]) -> str:
    kept = {int(k): v for k, v in shares.items() if v >= MIN_SHARE}
    if not kept and not any(shares.values()):
        return "4k/100"  # no size recorded for this direction: fio's default block
    if not kept:
        kept = {int(max(shares, key=lambda k: shares[k])): 1.0}
    total = sum(kept.values())
    percents = {k: max(1, round(100 * v / total)) for k, v in sorted(kept.items())}
    # whole percents summing to 100: the largest bucket takes the rounding
    largest = max(percents, key=lambda k: percents[k])
    percents[largest] += 100 - sum(percents.values())
    return ":".join(f"{_size(k)}/{p}" for k, p in percents.items())


def _size(n: int) -> str:
    for unit, shift in (("m", 20), ("k", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(max(512, n))


def options(found: Fingerprint, region_bytes: int | None = None) -> dict[str, str]:
    """fio options reproducing the fingerprint's busiest device; BadInput when it saw none."""
    dev = found.busiest()
    if dev is None:
        raise BadInput(f"{found.where}: the capture saw no read or write: nothing to reproduce")
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
        if dev["queue_depth"]["mean"] < 1 and dev["mbps"] > 0:
            # Idle part of the time: paced in bytes, which readahead and writeback keep.
            rates = [max(1, round(dev["mbps"] * 1e6 * share / jobs))
                     for share in (dev["read_share"], 1 - dev["read_share"])]  # fmt: skip
            out["rate"] = str(rates[0]) if base == "read" else (
                f"{rates[0]},{rates[1]}" if base == "rw" else f"0,{rates[1]}")  # fmt: skip
    else:
        out["ioengine"] = "libaio"
        out["direct"] = "1"
        splits = [_split(dev["sizes"][k]) if k in kinds else "4k/100" for k in ("read", "write")]
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
        # backends). Direct I/O reaches its depth with libaio's iodepth instead.
        jobs = max(1, min(MAX_JOBS, round(dev["queue_depth"]["mean"])))
        if "rate" in out and jobs > 1:
            out["rate"] = ",".join(str(max(1, int(r) // jobs)) if r != "0" else r
                                   for r in out["rate"].split(","))  # fmt: skip
    if jobs > 1:
        out["numjobs"] = str(jobs)
    if "write" in kinds and per_sync is not None:
        # fio counts its own writes between syncs: the bytes the device got per flush, in
        # the job's writes (merged writeback of small writes is one device request).
        write_bytes = per_sync * dev["mean_size"]["write"]
        out["fdatasync"] = str(
            max(1, round(write_bytes / (bs if buffered else dev["mean_size"]["write"] or 1) / jobs))
        )
    if region_bytes is not None and dev["footprint_bytes"]:
        out["size"] = _size(max(1 << 20, min(region_bytes, dev["footprint_bytes"])) >> 20 << 20)
    return out


def job_text(found: Fingerprint, region_bytes: int | None = None, title: str = "") -> str:
    """The reproduction as a fio job file of one section (it passes tuner/trials/jobcheck)."""
    dev = found.busiest()
    lines = [f"# iotuner capture: a reproduction of {title or found.where}",
             f"# device {dev['device'] if dev else '?'} ({dev['class'] if dev else '?'}), "
             f"{found.data['seconds']:g} s captured, fingerprint schema {found.data['version']}",
             "[capture]"]  # fmt: skip
    lines += [f"{key}={value}" for key, value in options(found, region_bytes).items()]
    return "\n".join(lines) + "\n"
