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

import copy
import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, and_, eq, floordiv, gt, itemgetter, lshift, lt, mul, or_, rshift, sub
from typing import Any, cast

from tuner.capture.events import (
    SECTOR,
    Completion,
    Event,
    Flags,
    Issue,
    _text,
    clean_comm,
    parse_rwbs,
)

STREAMS = 64
FOOTPRINT_CHUNKS = 1 << 18
PROCESS_CHUNKS = 1 << 14
INFLIGHT = 4096
PROCESSES = 16
CHUNK = INFLIGHT // 2
"""A batch of more issues than this is folded in parts (see DeviceStats.add_records)."""
HOT_SHARE = 0.8
"""The hot set is the fewest footprint chunks that received this share of the requests."""
WINDOW_NS = 1_000_000_000
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


class _Kinds(dict[Any, Any]):
    """rwbs (text or a page's bytes) to its Flags (None when it is not rwbs), each read once."""

    def __missing__(self, key: str | bytes) -> Flags | None:
        flags = parse_rwbs(_text(key))
        if len(self) < 1024:
            self[key] = flags
        return flags


class _Comms(dict[Any, Any]):
    """An issuing task's comm (text or bytes) to its fingerprint name, each cleaned once."""

    def __missing__(self, key: str | bytes) -> str:
        name = clean_comm(key)
        if len(self) < 4096:
            self[key] = name
        return name


KINDS = _Kinds()
COMMS = _Comms()


class Streams:
    """Stream heads matched by nearest previous end, at most STREAMS of them."""

    def __init__(self) -> None:
        # end sector -> the head's continuations in the current window; least recent first
        self.heads: dict[int, int] = {}
        self.window_start: int | None = None
        self.active_sum = 0
        self.windows = 0
        self.window_requests = 0

    def add(self, ts: Sequence[int], sectors: Sequence[int], ends: Sequence[int]) -> int:
        """Fold in requests (times in ns, start and end sectors, in order); the number that
        continued a stream (sequential)."""
        heads = self.heads
        pop = heads.pop
        sequential = 0
        n = len(ts)
        if self.window_start is None and n:
            self.window_start = ts[0]
        limit = (self.window_start or 0) + WINDOW_NS
        requests = self.window_requests
        # follows[i - 1]: request i starts where request i - 1 ended
        follows = list(map(eq, sectors[1:], ends[:-1]))
        i = 0
        while i < n:
            t = ts[i]
            if t >= limit:
                self.window_requests = requests
                self._roll(t)
                requests = self.window_requests
                limit = (self.window_start or 0) + WINDOW_NS
            if i and follows[i - 1] and i < n - 1 and follows[i]:
                # A run of requests each continuing the one before (one sequential stream:
                # the most requests a second a disk serves): the head the previous request
                # left moves along the run at once, as one request at a time would move it,
                # unless an end on the way is another head's (then one at a time).
                try:
                    run = follows.index(False, i) + 1
                except ValueError:
                    run = n
                run = bisect_left(ts, limit, i, run)
                if heads.keys().isdisjoint(ends[i:run]):
                    heads[ends[run - 1]] = pop(ends[i - 1]) + run - i
                    sequential += run - i
                    requests += run - i
                    i = run
                    continue
            requests += 1
            hits = pop(sectors[i], -1)
            if hits < 0:
                if len(heads) >= STREAMS:
                    del heads[next(iter(heads))]
                heads[ends[i]] = 0
            else:
                heads[ends[i]] = hits + 1
                sequential += 1
            i += 1
        self.window_requests = requests
        return sequential

    def _roll(self, ts: int) -> None:
        assert self.window_start is not None
        while ts - self.window_start >= WINDOW_NS:
            self.close_window()
            self.window_start += WINDOW_NS
            if ts - self.window_start >= WINDOW_NS * 8:  # a long idle gap: skip it whole
                self.window_start = ts

    def close_window(self) -> None:
        """End the current one-second window: count the streams it saw continue, weighted
        by the window's requests (a window the capture cut short weighs what it holds)."""
        active = sum(1 for hits in self.heads.values() if hits >= 2)
        self.active_sum += active * self.window_requests
        self.windows += self.window_requests
        self.window_requests = 0
        self.heads.update(dict.fromkeys(self.heads, 0))

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
        self.shift = chunk.bit_length() - 1
        self.counts = array("I", bytes(4 * max(1, -(-size_bytes // chunk))))

    def add(self, offset: int, size: int) -> None:
        """Count one request of `size` bytes at byte `offset` (beyond the device: ignored)."""
        self.add_sectors([offset // SECTOR], [(offset + max(size, 1) + SECTOR - 1) // SECTOR])

    def add_sectors(self, sectors: Sequence[int], ends: Sequence[int], long: bool = True) -> None:
        """Count requests from `sectors` to `ends` (exclusive), each chunk it touches once;
        `long`: some may be longer than a chunk."""
        shift = self.shift - 9
        firsts = list(map(rshift, sectors, repeat(shift)))
        # the last byte's chunk: (end * 512 - 1) >> shift, as a whole-sector end allows
        lasts = list(map(rshift, map(sub, ends, repeat(1)), repeat(shift)))
        touched = Counter(firsts)
        touched.update(compress(lasts, map(lt, firsts, lasts)))
        if long:  # a request over more than two chunks: the middle ones
            for first, last in zip(firsts, lasts, strict=True):
                touched.update(range(first + 1, last))
        counts, top = self.counts, len(self.counts)
        for i, n in touched.items():
            if 0 <= i < top:
                counts[i] = min(0xFFFFFFFF, counts[i] + n)

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


def _ends(sectors: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """Each request's end sector (exclusive)."""
    return list(map(add, sectors, map(rshift, sizes, repeat(9))))


def _buckets(into: Counter[int], lengths: Counter[int], shift: int) -> None:
    """Add a Counter of bit lengths to a power-of-two histogram: bucket bit_length + shift,
    within 0..63 (bit_length 0, a zero, is bucket 0)."""
    for length, n in lengths.items():
        into[min(63, max(0, length + shift)) if length else 0] += n


@dataclass
class Group:
    """The statistics of one device's requests, or of one process's on it (times in ns)."""

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
    last_issue: int | None = None
    last_end: int | None = None
    inflight: int = 0
    depth_area: int = 0
    depth_since: int | None = None
    busy_from: int | None = None
    pids: set[int] = field(default_factory=set)
    streams: Streams = field(default_factory=Streams)
    footprint: Footprint | None = None

    def __post_init__(self) -> None:
        self.footprint = Footprint(self.size_bytes, self.chunks)

    def issued(self, first_ts: int, kinds: Counter[Any], pids: Iterable[int]) -> None:
        """Fold in the counts of issued requests of every kind (`kinds`: rwbs -> requests),
        the first issued at `first_ts`: flushes, FUA, discards, the issuing processes."""
        if self.busy_from is None:
            self.busy_from = first_ts
        if len(self.pids) < 1024:
            for pid in dict.fromkeys(pids):
                if len(self.pids) >= 1024:
                    break
                self.pids.add(pid)
        for raw, n in kinds.items():
            flags = KINDS[raw]
            if flags.preflush:
                self.preflushes += n
            if flags.fua:
                self.fua += n
            if flags.preflush or flags.fua or flags.op == "F":
                # A flush request is printed FF (a flush op carrying a preflush): one sync.
                self.syncs += n
            if flags.op == "F":
                self.flushes += n
            elif flags.op == "D":
                self.discards += n

    def data(
        self, ts: Sequence[int], rwbs: Sequence[Any], sectors: Sequence[int], sizes: Sequence[int]
    ) -> None:
        """Fold in read and write requests of some bytes, in the order issued."""
        if not ts:
            return
        kinds = dict.fromkeys(rwbs)
        for raw in kinds:
            part = sizes if len(kinds) == 1 else list(compress(sizes, map(raw.__eq__, rwbs)))
            flags = KINDS[raw]
            moved = sum(part)
            counted = Counter(part)  # a few sizes, many times: bucketed once each
            lengths: Counter[int] = Counter()
            for size, n in counted.items():
                lengths[size.bit_length()] += n
            if flags.is_read:
                self.read_requests += len(part)
                self.read_bytes += moved
                _buckets(self.read_sizes, lengths, -1)
                if flags.readahead:
                    self.readahead_bytes += moved
            else:
                self.write_requests += len(part)
                self.write_bytes += moved
                _buckets(self.write_sizes, lengths, -1)
                if flags.sync or flags.fua:
                    self.sync_write_bytes += moved
        self.requests += len(ts)
        self.bytes += sum(sizes)
        ends = _ends(sectors, sizes)
        self.sequential += self.streams.add(ts, sectors, ends)
        # seek: from where the previous request ended (the first has none before it); a
        # negative distance has its magnitude's bit length
        before = ends[:-1] if self.last_end is None else [self.last_end, *ends[:-1]]
        moved_by = map(sub, sectors[1:] if self.last_end is None else sectors, before)
        _buckets(self.seeks, Counter(map(int.bit_length, moved_by)), 8)  # x 512 bytes, log2
        self.last_end = ends[-1]
        # gaps between issues: never negative, the records being in time order
        previous = ts[:-1] if self.last_issue is None else [self.last_issue, *ts[:-1]]
        gaps = list(map(sub, ts[1:] if self.last_issue is None else ts, previous))
        _buckets(self.gaps, Counter(map(int.bit_length, map(floordiv, gaps, repeat(1000)))), -1)
        self.gap_sum += sum(gaps) / 1e3
        self.gap_sq += sum(map(mul, gaps, gaps)) / 1e6
        self.gap_n += len(gaps)
        self.last_issue = ts[-1]
        assert self.footprint is not None
        self.footprint.add_sectors(sectors, ends, max(sizes) > self.footprint.chunk)

    def depth(self, issue_ts: Sequence[int], done_ts: Sequence[int]) -> None:
        """Fold in the queue depth: this group's read and write issues and the completions of
        its requests, at their times, each in order (an issue first at the same time)."""
        if not issue_ts and not done_ts:
            return
        last = max(issue_ts[-1] if issue_ts else 0, done_ts[-1] if done_ts else 0)
        first = min(issue_ts[0] if issue_ts else last, done_ts[0] if done_ts else last)
        since = first if self.depth_since is None else self.depth_since
        # The in-flight count is a step function: its integral from `since` to `last` is
        # the count then held over the whole span, plus each issue's time to `last`, less
        # each completion's (every event is at or after `since`: the batches are in order).
        self.depth_area += (
            self.inflight * (last - since)
            + (last * len(issue_ts) - sum(issue_ts))
            - (last * len(done_ts) - sum(done_ts))
        )
        if issue_ts:
            # As each request found it: the ones in flight, itself included.
            before = map(bisect_left, repeat(done_ts), issue_ts)
            found = map(sub, range(self.inflight + 1, self.inflight + len(issue_ts) + 1), before)
            self.depths.update(found)
        self.inflight = max(0, self.inflight + len(issue_ts) - len(done_ts))
        self.depth_since = last

    def served(self, durations: Iterable[int]) -> None:
        """Fold in requests' times from issue to completion (ns)."""
        spans = map(floordiv, durations, repeat(1000))  # issue before completion: >= 0
        _buckets(self.service, Counter(map(int.bit_length, spans)), -1)

    def summary(self, seconds: float) -> dict[str, Any]:
        """The group's figures as the fingerprint holds them (docs/capture.md); rates and the
        mean depth over its active span, at most `seconds`."""
        assert self.footprint is not None
        self.streams.close_window()
        footprint, hot = self.footprint.summary()
        # Rates over the span the group was active (its first issue to its last event): a
        # capture longer than the workload would otherwise dilute them.
        active = ((self.depth_since or 0) - (self.busy_from or 0)) / 1e9
        span = max(min(seconds, active) if active > 0 else seconds, 1e-6)
        writes_per_sync = None
        if self.syncs and self.write_requests:
            writes_per_sync = round(self.write_requests / self.syncs, 3)
        mean_gap = self.gap_sum / self.gap_n if self.gap_n else 0.0
        var = self.gap_sq / self.gap_n - mean_gap**2 if self.gap_n else 0.0
        depth_mean = self.depth_area / 1e9 / span
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


class _Ops(dict[Any, Any]):
    """rwbs to its operation as a number (R, W, F, D, N: 1 to 5), for matching completions to
    issues by (sector << 3 | operation): an int key hashes faster than a pair."""

    def __missing__(self, key: str | bytes) -> int:
        flags = KINDS[key]
        op = "RWFDN".index(flags.op) + 1 if flags is not None else 0
        if len(self) < 1024:
            self[key] = op
        return op


class _Data(dict[Any, Any]):
    """rwbs to whether it reads or writes (the requests every figure but flushes counts)."""

    def __missing__(self, key: str | bytes) -> bool:
        flags = KINDS[key]
        moves = flags is not None and (flags.is_read or flags.is_write)
        if len(self) < 1024:
            self[key] = moves
        return moves


OPS = _Ops()
DATA = _Data()


def _rwbs(flags: Flags) -> str:
    """The rwbs string of some flags (the kernel's order: F, op, F, A, S)."""
    text = ("F" if flags.preflush else "") + flags.op + ("F" if flags.fua else "")
    return text + ("A" if flags.readahead else "") + ("S" if flags.sync else "")


_FIRST = itemgetter(0)


def _pick(columns: Iterable[Sequence[Any]], mask: Iterable[Any]) -> list[list[Any]]:
    """The columns' items where `mask` is true (one pass each, in C)."""
    mask = list(mask)
    return [list(compress(col, mask)) for col in columns]


class DeviceStats:
    """One device's statistics and its processes', fed records in batches (in time order)."""

    def __init__(self, size_bytes: int) -> None:
        self.size_bytes = size_bytes
        self.total = Group(size_bytes, FOOTPRINT_CHUNKS)
        self.processes: dict[str, Group] = {}
        # sector << 3 | op -> (issued ns, process group), least recently issued first
        self.inflight: dict[int, tuple[int, str]] = {}
        self.unmatched = 0
        self.refused = 0
        """Records whose rwbs is not one: never counted."""
        self.mirror: str | None = None
        """The one process group while there has been only one: its figures are the
        device's, so it is kept by `total` (its footprint apart when its chunks differ) and
        becomes a group of its own, a copy of `total`, when a second process appears."""

    def _process(self, comm: str) -> str:
        key = comm if comm in self.processes or len(self.processes) < PROCESSES - 1 else OTHER
        if key not in self.processes:
            self.processes[key] = Group(self.size_bytes, PROCESS_CHUNKS)
        return key

    def add(self, event: Event) -> None:
        """Fold in one event of this device (a batch of one: `add_records` is the fast way)."""
        ts, rwbs = round(event.ts * 1e9), _rwbs(event.flags)
        if event.issue:
            self.add_records([(ts, 0, rwbs, event.sector, event.size, event.comm, event.pid)], [])
        else:
            self.add_records([], [(ts, 0, rwbs, event.sector, event.size)])

    def add_records(self, issues: Sequence[Issue], completions: Sequence[Completion]) -> None:
        """Fold in issues and completions of this device, each in time order. Where an issue
        and a completion have the same time, the issue is taken first."""
        if len(issues) > CHUNK:
            # In parts of CHUNK issues, cut in time: a part's completions all match in one
            # step while the waiting table cannot overflow (INFLIGHT).
            first = 0
            for cut in range(CHUNK, len(issues), CHUNK):
                upto = bisect_left(completions, issues[cut][0], first, key=_FIRST)
                self.add_records(issues[cut - CHUNK : cut], completions[first:upto])
                first = upto
            last = (len(issues) - 1) // CHUNK * CHUNK
            self.add_records(issues[last:], completions[first:])
            return
        i_ts, _, i_rwbs, i_sectors, i_sizes, i_comms, i_pids = (
            zip(*issues, strict=True) if issues else ((),) * 7
        )
        c_ts: Sequence[int]
        c_ts, _, c_rwbs, c_sectors, _ = zip(*completions, strict=True) if completions else ((),) * 5
        i_kinds = Counter(i_rwbs)
        bad = {r for r in {*i_kinds, *c_rwbs} if KINDS[r] is None}
        if bad:
            kept = [i for i in issues if i[2] not in bad]
            ended = [c for c in completions if c[2] not in bad]
            self.refused += len(issues) + len(completions) - len(kept) - len(ended)
            self.add_records(kept, ended)
            return
        tasks = set(i_comms)
        if len(tasks) == 1:  # one task's comm: the common case, named once
            owner = self._process(COMMS[i_comms[0]])
            owners: Sequence[str] = [owner] * len(i_ts)
            groups = {owner: None}
        else:
            names = list(map(COMMS.__getitem__, i_comms))
            keys = {name: self._process(name) for name in dict.fromkeys(names)}
            owners = names if all(k == v for k, v in keys.items()) else [keys[n] for n in names]
            groups = dict.fromkeys(owners)
        data: Sequence[Sequence[Any]] = [i_ts, i_rwbs, i_sectors, i_sizes, owners]
        if not (all(map(DATA.__getitem__, i_kinds)) and min(i_sizes, default=1) > 0):
            data = _pick(data, map(and_, map(DATA.__getitem__, i_rwbs), map(bool, i_sizes)))
        d_ts, d_rwbs, d_sectors, d_sizes, d_owners = data
        # Counts of every kind, then the read and write requests, per group.
        if self.mirror is not None and any(key != self.mirror for key in groups):
            self._part()
        elif self.mirror is None and self.total.busy_from is None and len(self.processes) == 1:
            self.mirror = next(iter(self.processes))
        if i_ts:
            self.total.issued(i_ts[0], i_kinds, i_pids)
            self.total.data(d_ts, d_rwbs, d_sectors, d_sizes)
        if self.mirror is not None:
            groups = {}
            mirrored = self.processes[self.mirror].footprint
            assert mirrored is not None and self.total.footprint is not None
            if d_sectors and mirrored.chunk != self.total.footprint.chunk:
                mirrored.add_sectors(d_sectors, _ends(d_sectors, d_sizes))
        for key in groups:
            group = self.processes[key]
            if len(groups) == 1:
                group.issued(i_ts[0], i_kinds, i_pids)
                group.data(d_ts, d_rwbs, d_sectors, d_sizes)
                continue
            mine = list(map(key.__eq__, owners))
            g_ts, g_rwbs, g_pids = _pick((i_ts, i_rwbs, i_pids), mine)
            group.issued(g_ts[0], Counter(g_rwbs), g_pids)
            group.data(*_pick((d_ts, d_rwbs, d_sectors, d_sizes), map(key.__eq__, d_owners)))
        # Completions matched to their issues; the queue depth and service times per group.
        waiting = list(map(or_, map(lshift, d_sectors, repeat(3)), map(OPS.__getitem__, d_rwbs)))
        ending = list(map(or_, map(lshift, c_sectors, repeat(3)), map(OPS.__getitem__, c_rwbs)))
        found = self._pair(waiting, d_ts, d_owners, ending, c_ts)
        if None in found:
            matched = list(map(bool, found))
            self.unmatched += len(found) - sum(matched)
            c_ts, found = _pick((c_ts, found), matched)
        issued_ts, c_owners = zip(*found, strict=True) if found else ((), ())
        self.total.depth(d_ts, c_ts)
        self.total.served(map(sub, c_ts, issued_ts))
        waited = {} if self.mirror is not None else dict.fromkeys([*groups, *c_owners])
        for key in waited:
            group = self.processes[key]
            if len(waited) == 1:
                group.depth(d_ts, c_ts)
                group.served(map(sub, c_ts, issued_ts))
                continue
            g_ts = list(compress(d_ts, map(key.__eq__, d_owners)))
            h_ts, h_issued = _pick((c_ts, issued_ts), map(key.__eq__, c_owners))
            group.depth(g_ts, h_ts)
            group.served(map(sub, h_ts, h_issued))

    def _pair(
        self, keys: list[int], ts: Sequence[int], owners: Sequence[str], done: list[int],
        done_ts: Sequence[int],
    ) -> list[tuple[int, str] | None]:  # fmt: skip
        """Each completion's issue (its time and group), or None: issues are held by
        (sector, op), at most INFLIGHT (the least recent go), as if one event at a time."""
        table = self.inflight
        unique = set(keys)
        if (
            len(unique) == len(keys)
            and len(table) + len(keys) <= INFLIGHT
            and table.keys().isdisjoint(unique)
        ):
            # No key issued twice, none already waiting, nothing pushed out: all issues in,
            # then all completions out, is the same, unless a completion came before its
            # issue (then it took a later issue's time): undone, one event at a time.
            before = table.copy()
            table.update(zip(keys, zip(ts, owners, strict=True), strict=True))
            found = list(map(table.pop, done, repeat(None)))
            if None in found:
                paired = [(f[0], t) for f, t in zip(found, done_ts, strict=True) if f is not None]
                late = any(issued > ended for issued, ended in paired)
            else:
                late = any(map(gt, map(_FIRST, cast(list[tuple[int, str]], found)), done_ts))
            if not late:
                return found
            self.inflight = table = before
        found = []
        events = sorted(
            [
                *((t, 0, k, (t, o)) for t, k, o in zip(ts, keys, owners, strict=True)),
                *((t, 1, k, None) for t, k in zip(done_ts, done, strict=True)),
            ],
            key=itemgetter(0, 1),
        )
        for _, completes, key, value in events:
            if completes:
                found.append(table.pop(key, None))
                continue
            if key not in table and len(table) >= INFLIGHT:
                del table[next(iter(table))]
            table[key] = value  # type: ignore[assignment]
        return found

    def _part(self) -> None:
        """The mirrored process group made a group of its own: the device's figures so far."""
        assert self.mirror is not None
        own = self.processes[self.mirror]
        group = copy.deepcopy(self.total)
        assert own.footprint is not None and group.footprint is not None
        if own.footprint.chunk != group.footprint.chunk:
            group.chunks, group.footprint = own.chunks, own.footprint
        self.processes[self.mirror] = group
        self.mirror = None

    def summary(self, seconds: float) -> dict[str, Any]:
        """The device's figures and its processes' (largest by bytes first)."""
        if self.mirror is not None:
            self._part()
        ranked = sorted(self.processes.items(), key=lambda kv: -kv[1].bytes)
        return {
            **self.total.summary(seconds),
            "by_process": [
                {"comm": comm, **group.summary(seconds)}
                for comm, group in ranked
                if group.requests or group.flushes
            ],
        }
