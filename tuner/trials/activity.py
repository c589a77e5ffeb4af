"""What block devices did between two reads of /proc/diskstats: rates, request size, mix,
utilisation and queue occupancy, as `iostat -x` shows them. The daemon's workload watch
classifies these; `tune --idle-below` waits on their utilisation."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.trials.diskstats import DiskCounters


@dataclass(frozen=True)
class Activity:
    """What one device did over one interval.

    MB are 10^6 bytes; avg_request_kb is KiB per request both directions together;
    read_fraction is the share of bytes read (0 when nothing moved); util_percent is the share
    of the interval with a request in flight; queue_depth is the mean number of requests in
    flight (time in queue over the interval, Little's law).
    """

    read_mbps: float
    write_mbps: float
    read_iops: float
    write_iops: float
    avg_request_kb: float
    read_fraction: float
    util_percent: float
    queue_depth: float

    @property
    def iops(self) -> float:
        """Requests completed per second, both directions."""
        return self.read_iops + self.write_iops

    @property
    def mbps(self) -> float:
        """MB/s both directions."""
        return self.read_mbps + self.write_mbps

    def as_json(self) -> dict[str, float]:
        """The figures `iotuner status` shows, rounded."""
        return {
            "read_mbps": round(self.read_mbps, 2),
            "write_mbps": round(self.write_mbps, 2),
            "iops": round(self.iops, 1),
            "avg_request_kb": round(self.avg_request_kb, 1),
            "read_fraction": round(self.read_fraction, 3),
            "util_percent": round(self.util_percent, 1),
            "queue_depth": round(self.queue_depth, 2),
        }


def activity(before: DiskCounters, after: DiskCounters, seconds: float) -> Activity:
    """The activity between two samples `seconds` apart (counters that went back: zeros)."""
    if seconds <= 0 or after.went_back(before):
        return Activity(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    read_b, write_b = after.read_bytes - before.read_bytes, after.write_bytes - before.write_bytes
    reads, writes = after.reads - before.reads, after.writes - before.writes
    moved = read_b + write_b
    return Activity(
        read_mbps=read_b / seconds / 1e6,
        write_mbps=write_b / seconds / 1e6,
        read_iops=reads / seconds,
        write_iops=writes / seconds,
        avg_request_kb=moved / (reads + writes) / 1024 if reads + writes else 0.0,
        read_fraction=read_b / moved if moved else 0.0,
        # io_ticks can run a tick ahead of the wall clock between two reads: cap at 100.
        util_percent=min(100.0, (after.io_ticks_ms - before.io_ticks_ms) / seconds / 10),
        queue_depth=(after.queue_ms - before.queue_ms) / seconds / 1000,
    )
