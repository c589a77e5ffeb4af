"""Streaming statistics of block requests: bounded memory whatever the capture's length.

One `Group` per device and one per process (by comm) on it; `DeviceStats` feeds both from
each event. What is kept: counters, power-of-two histograms (at most 64 buckets each), a table
of at most STREAMS stream heads, a footprint map of at most FOOTPRINT_CHUNKS chunks per device
(PROCESS_CHUNKS per process), at most INFLIGHT requests awaiting completion, at most
PROCESSES process groups (the rest fold into "other").

How each figure is decided (docs/capture.md says it for users):
- sequential: a request starting exactly where a tracked stream's last request ended. Streams
  are matched by nearest previous end: the head whose end is the request's start continues;
  otherwise the request opens a new head (the least recently used head is dropped when the
  table is full).
- concurrent streams: per second of capture, the heads continued at least twice in it; the
  mean weighted by each second's requests (the concurrency the mean request saw).
- seek distance: from the end of the previous request on the device (the head position).
- queue depth: requests issued and not yet completed (issue minus complete), time-weighted;
  requests issued before the capture began are not counted when they complete.
- buffered or direct: a read the kernel flags readahead (A) went through the page cache, for
  certain; a read without it is a page cache miss or a direct read, which the device cannot
  tell apart (and which load the device the same way). A write without the sync flag (S) is
  page cache writeback; with it, a direct, O_SYNC or fsync-driven write.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from tuner.capture.events import SECTOR, Event

STREAMS = 64
FOOTPRINT_CHUNKS = 1 << 18
PROCESS_CHUNKS = 1 << 14
INFLIGHT = 4096
PROCESSES = 16
HOT_SHARE = 0.8
"""The hot set is the fewest footprint chunks that received this share of the requests."""
WINDOW_S = 1.0
OTHER = "other"


def _log2(value: float) -> int:
    """floor(log2(value)) for value >= 1, else 0 (at most 63): bit_length, no float log."""
    return min(63, max(0, int(value).bit_length() - 1))


def _shares(counts: Counter[int]) -> dict[str, float]:
    total = sum(counts.values())
    if not total:
        return {}
    return {str(1 << k): round(n / total, 4) for k, n in sorted(counts.items())}


def _quantile(counts: Counter[int], q: float) -> float:
    """The q-quantile of a power-of-two histogram, as its bucket's geometric middle."""
    total = sum(counts.values())
    if not total:
        return 0.0
    seen = 0
    for k in sorted(counts):
        seen += counts[k]
        if seen >= q * total:
            return (1 << k) * math.sqrt(2) if k else 1.0
    return 0.0


def _exact_quantile(counts: Counter[int], q: float) -> int:
    """The q-quantile of a histogram of whole numbers."""
    total = sum(counts.values())
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= q * total:
            return value
    return 0


@dataclass
class _Head:
    end: int
    last: float
    hits: int = 0
    window_hits: int = 0


class Streams:
    """Stream heads matched by nearest previous end, at most STREAMS of them."""

    def __init__(self) -> None:
        self.heads: OrderedDict[int, _Head] = OrderedDict()  # keyed by end sector, LRU first
        self.window_start: float | None = None
        self.active_sum = 0
        self.windows = 0
        self.window_requests = 0

    def add(self, ts: float, sector: int, end: int) -> bool:
        """Fold one request in; True when it continued a stream (sequential)."""
        self._roll(ts)
        self.window_requests += 1
        head = self.heads.pop(sector, None)
        if head is None:
            if len(self.heads) >= STREAMS:
                self.heads.popitem(last=False)
            head = _Head(end=end, last=ts)
            sequential = False
        else:
            head.hits += 1
            head.window_hits += 1
            sequential = True
        head.end, head.last = end, ts
        self.heads[end] = head
        return sequential

    def _roll(self, ts: float) -> None:
        if self.window_start is None:
            self.window_start = ts
        while ts - self.window_start >= WINDOW_S:
            self.close_window()
            self.window_start += WINDOW_S
            if ts - self.window_start >= WINDOW_S * 8:  # a long idle gap: skip it whole
                self.window_start = ts

    def close_window(self) -> None:
        """End the current one-second window: count the streams it saw continue, weighted
        by the window's requests (a window the capture cut short weighs what it holds)."""
        active = sum(1 for h in self.heads.values() if h.window_hits >= 2)
        self.active_sum += active * self.window_requests
        self.windows += self.window_requests
        self.window_requests = 0
        for h in self.heads.values():
            h.window_hits = 0

    def mean(self) -> float:
        """Concurrent streams as the mean request saw them (0 for random requests only)."""
        return self.active_sum / self.windows if self.windows else 0.0


class Footprint:
    """Accesses per chunk of a device of `size_bytes`, in at most `max_chunks` chunks."""

    def __init__(self, size_bytes: int, max_chunks: int) -> None:
        chunk = 1 << 20
        while size_bytes // chunk > max_chunks:
            chunk <<= 1
        self.chunk = chunk
        self.counts = array("I", bytes(4 * max(1, -(-size_bytes // chunk))))

    def add(self, offset: int, size: int) -> None:
        """Count one request of `size` bytes at byte `offset` (beyond the device: ignored)."""
        first, last = offset // self.chunk, (offset + max(size, 1) - 1) // self.chunk
        for i in range(first, min(last, len(self.counts) - 1) + 1):
            if self.counts[i] < 0xFFFFFFFF:
                self.counts[i] += 1

    def summary(self) -> tuple[int, int]:
        """(footprint bytes, hot set bytes) at this map's chunk size."""
        touched = sorted((c for c in self.counts if c), reverse=True)
        total = sum(touched)
        seen = hot = 0
        for c in touched:
            if seen >= HOT_SHARE * total:
                break
            seen += c
            hot += 1
        return len(touched) * self.chunk, hot * self.chunk


@dataclass
class Group:
    """The statistics of one device's requests, or of one process's on it."""

    size_bytes: int
    chunks: int
    requests: int = 0
    bytes: int = 0
    read_requests: int = 0
    read_bytes: int = 0
    write_requests: int = 0
    write_bytes: int = 0
    discards: int = 0
    readahead_bytes: int = 0
    sync_write_bytes: int = 0
    flushes: int = 0
    preflushes: int = 0
    fua: int = 0
    syncs: int = 0
    sequential: int = 0
    read_sizes: Counter[int] = field(default_factory=Counter)
    write_sizes: Counter[int] = field(default_factory=Counter)
    seeks: Counter[int] = field(default_factory=Counter)
    gaps: Counter[int] = field(default_factory=Counter)
    service: Counter[int] = field(default_factory=Counter)
    depths: Counter[int] = field(default_factory=Counter)
    gap_sum: float = 0.0
    gap_sq: float = 0.0
    gap_n: int = 0
    last_issue: float | None = None
    last_end: int | None = None
    inflight: int = 0
    depth_area: float = 0.0
    depth_since: float | None = None
    busy_from: float | None = None
    pids: set[int] = field(default_factory=set)
    streams: Streams = field(default_factory=Streams)
    footprint: Footprint | None = None

    def __post_init__(self) -> None:
        self.footprint = Footprint(self.size_bytes, self.chunks)

    def _depth(self, ts: float, delta: int) -> None:
        if self.depth_since is not None:
            self.depth_area += self.inflight * max(0.0, ts - self.depth_since)
        self.depth_since = ts
        self.inflight = max(0, self.inflight + delta)

    def issue(self, event: Event) -> None:
        """Fold in one issued request."""
        flags = event.flags
        if self.busy_from is None:
            self.busy_from = event.ts
        if len(self.pids) < 1024:
            self.pids.add(event.pid)
        if flags.preflush:
            self.preflushes += 1
        if flags.fua:
            self.fua += 1
        if flags.preflush or flags.fua or flags.op == "F":
            # A flush request is printed FF (a flush op carrying a preflush): one sync.
            self.syncs += 1
        if flags.op == "F":
            self.flushes += 1
            return
        if flags.op == "D":
            self.discards += 1
            return
        if not (flags.is_read or flags.is_write) or event.size <= 0:
            return
        self.requests += 1
        self.bytes += event.size
        if flags.is_read:
            self.read_requests += 1
            self.read_bytes += event.size
            self.read_sizes[_log2(event.size)] += 1
            if flags.readahead:
                self.readahead_bytes += event.size
        else:
            self.write_requests += 1
            self.write_bytes += event.size
            self.write_sizes[_log2(event.size)] += 1
            if flags.sync or flags.fua:
                self.sync_write_bytes += event.size
        end = event.sector + event.size // SECTOR
        if self.streams.add(event.ts, event.sector, end):
            self.sequential += 1
        if self.last_end is not None:
            self.seeks[_log2(abs(event.sector - self.last_end) * SECTOR) if
                       event.sector != self.last_end else 0] += 1  # fmt: skip
        self.last_end = end
        if self.last_issue is not None:
            gap = max(0.0, event.ts - self.last_issue) * 1e6
            self.gaps[_log2(gap)] += 1
            self.gap_sum += gap
            self.gap_sq += gap * gap
            self.gap_n += 1
        self.last_issue = event.ts
        assert self.footprint is not None
        self.footprint.add(event.sector * SECTOR, event.size)
        self._depth(event.ts, +1)
        self.depths[min(self.inflight, 1 << 20)] += 1

    def complete(self, ts: float, issued: float) -> None:
        """Fold in the completion of a request this group issued at `issued`."""
        self._depth(ts, -1)
        self.service[_log2((ts - issued) * 1e6)] += 1

    def summary(self, seconds: float) -> dict[str, Any]:
        """The group's figures as the fingerprint holds them (docs/capture.md); rates and the
        mean depth over its active span, at most `seconds`."""
        assert self.footprint is not None
        if self.depth_since is not None and self.busy_from is not None:
            self._depth(self.depth_since, 0)
        self.streams.close_window()
        footprint, hot = self.footprint.summary()
        # Rates over the span the group was active (its first issue to its last event): a
        # capture longer than the workload would otherwise dilute them.
        active = (self.depth_since or 0.0) - (self.busy_from or 0.0)
        span = max(min(seconds, active) if active > 0 else seconds, 1e-6)
        writes_per_sync = None
        if self.syncs and self.write_requests:
            writes_per_sync = round(self.write_requests / self.syncs, 3)
        mean_gap = self.gap_sum / self.gap_n if self.gap_n else 0.0
        var = self.gap_sq / self.gap_n - mean_gap**2 if self.gap_n else 0.0
        depth_mean = self.depth_area / span
        return {
            "requests": self.requests,
            "bytes": self.bytes,
            "iops": round(self.requests / span, 3),
            "mbps": round(self.bytes / span / 1e6, 3),
            "processes": len(self.pids),
            "read_share": round(self.read_bytes / self.bytes, 4) if self.bytes else 0.0,
            "read_request_share": (
                round(self.read_requests / self.requests, 4) if self.requests else 0.0
            ),
            "sizes": {"read": _shares(self.read_sizes), "write": _shares(self.write_sizes)},
            "mean_size": {
                "read": self.read_bytes // self.read_requests if self.read_requests else 0,
                "write": self.write_bytes // self.write_requests if self.write_requests else 0,
            },
            "sequential_share": round(self.sequential / self.requests, 4) if self.requests else 0.0,
            "streams": round(self.streams.mean(), 3),
            "seek_median_bytes": round(_quantile(self.seeks, 0.5)),
            "footprint_bytes": footprint,
            "hot_bytes": hot,
            "queue_depth": {
                "mean": round(depth_mean, 3),
                "p95": _exact_quantile(self.depths, 0.95),
                "max": max(self.depths, default=0),
            },
            "service_ms": {
                "p50": round(_quantile(self.service, 0.5) / 1e3, 3),
                "p99": round(_quantile(self.service, 0.99) / 1e3, 3),
            },
            "interarrival_us": {
                "mean": round(mean_gap, 1),
                "cv": round(math.sqrt(max(0.0, var)) / mean_gap, 3) if mean_gap else 0.0,
            },
            "flushes": {
                "flush": self.flushes,
                "preflush": self.preflushes,
                "fua": self.fua,
                "discard": self.discards,
                "writes_per_sync": writes_per_sync,
            },
            "cache": {
                "readahead_share": (
                    round(self.readahead_bytes / self.read_bytes, 4) if self.read_bytes else 0.0
                ),
                "sync_write_share": (
                    round(self.sync_write_bytes / self.write_bytes, 4) if self.write_bytes else 0.0
                ),
            },
        }


class DeviceStats:
    """One device's statistics and its processes', fed event by event."""

    def __init__(self, size_bytes: int) -> None:
        self.size_bytes = size_bytes
        self.total = Group(size_bytes, FOOTPRINT_CHUNKS)
        self.processes: dict[str, Group] = {}
        self.inflight: OrderedDict[tuple[int, str], tuple[float, str]] = OrderedDict()
        self.unmatched = 0
        self.first: float | None = None
        self.last: float | None = None

    def _process(self, comm: str) -> Group:
        key = comm if comm in self.processes or len(self.processes) < PROCESSES - 1 else OTHER
        group = self.processes.get(key)
        if group is None:
            group = self.processes[key] = Group(self.size_bytes, PROCESS_CHUNKS)
        return group

    def add(self, event: Event) -> None:
        """Fold in one event of this device."""
        self.first = event.ts if self.first is None else self.first
        self.last = event.ts
        key = (event.sector, event.flags.op)
        if event.issue:
            group = self._process(event.comm)
            self.total.issue(event)
            group.issue(event)
            if event.flags.op in "RW" and event.size > 0:
                if len(self.inflight) >= INFLIGHT:
                    self.inflight.popitem(last=False)
                self.inflight[key] = (event.ts, event.comm if event.comm in
                                      self.processes else OTHER)  # fmt: skip
            return
        found = self.inflight.pop(key, None)
        if found is None:
            self.unmatched += 1
            return
        issued, comm = found
        self.total.complete(event.ts, issued)
        self.processes[comm].complete(event.ts, issued)

    def summary(self, seconds: float) -> dict[str, Any]:
        """The device's figures and its processes' (largest by bytes first)."""
        ranked = sorted(self.processes.items(), key=lambda kv: -kv[1].bytes)
        return {
            **self.total.summary(seconds),
            "by_process": [
                {"comm": comm, **group.summary(seconds)}
                for comm, group in ranked
                if group.requests or group.flushes
            ],
        }
