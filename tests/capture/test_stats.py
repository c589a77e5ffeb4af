"""The streaming statistics: on recorded trace_pipe text, and on events whose answer is known."""

from __future__ import annotations

import pytest

from tests.capture.samples import FIXTURES, collect
from tuner.capture.events import Completion, Event, Issue, parse_record, parse_rwbs, split
from tuner.capture.stats import FOOTPRINT_CHUNKS, INFLIGHT, STREAMS, DeviceStats, Footprint


def _event(ts: float, sector: int, size: int = 4096, rwbs: str = "R", issue: bool = True,
           comm: str = "app", pid: int = 1) -> Event:  # fmt: skip
    flags = parse_rwbs(rwbs)
    assert flags is not None
    return Event(issue=issue, ts=ts, major=7, minor=0, flags=flags, sector=sector, size=size,
                 comm=comm if issue else "", pid=pid if issue else 0)  # fmt: skip


def test_a_random_mix_shows_its_sizes_its_mix_and_no_stream() -> None:
    _, found = collect("random-mix")
    dev = found.busiest()
    assert dev is not None
    assert set(dev["sizes"]["read"]) == {"4096", "16384", "65536"}
    assert set(dev["sizes"]["write"]) == {"4096", "16384", "65536"}
    assert 0.65 < dev["read_request_share"] < 0.9  # fio paced 150 reads to 50 writes a second
    assert dev["sequential_share"] < 0.1
    assert dev["streams"] == 0
    assert dev["cache"]["readahead_share"] == 0  # direct reads: never readahead
    assert dev["cache"]["sync_write_share"] == 1  # direct writes carry the sync flag
    assert [p["comm"] for p in dev["by_process"]] == ["fio"]


def test_two_buffered_readers_are_two_streams_of_readahead() -> None:
    _, found = collect("buffered-streams")
    dev = found.busiest()
    assert dev is not None
    assert 1.7 < dev["streams"] < 2.3
    assert dev["sequential_share"] > 0.9
    assert dev["cache"]["readahead_share"] == 1
    # fio asked for 16 KiB; the device saw the readahead window grow to 256 KiB
    assert max(int(k) for k in dev["sizes"]["read"]) == 256 * 1024
    assert dev["read_share"] == 1


def test_flushes_are_counted_once_per_request() -> None:
    collector, found = collect("fdatasync")
    dev = found.busiest()
    assert dev is not None
    flushes = dev["flushes"]
    # The kernel prints a flush request "FF" (a flush op with a preflush): 19 of them.
    assert flushes["flush"] == flushes["preflush"] == 19
    assert flushes["writes_per_sync"] == round(dev["requests"] / 19, 3)
    assert dev["read_share"] == 0
    assert collector.unparsed == 0 and collector.lost == 0


def test_queue_depth_is_issued_minus_completed_over_time() -> None:
    stats = DeviceStats(1 << 30)
    stats.add(_event(0.0, 0))
    stats.add(_event(1.0, 100))  # two in flight from 1 s
    stats.add(_event(2.0, 0, issue=False))
    stats.add(_event(4.0, 100, issue=False))
    stats.add(_event(4.0, 999, issue=False))  # issued before the capture: not counted
    depth = stats.summary(4.0)["queue_depth"]
    # 1 for 1 s, 2 for 1 s, 1 for 2 s: 5 request-seconds over 4 s
    assert depth["mean"] == 1.25
    assert depth["max"] == 2
    assert stats.unmatched == 1


def test_interleaved_sequential_readers_are_counted_as_streams() -> None:
    stats = DeviceStats(1 << 30)
    ends = [0, 1 << 20, 2 << 20]  # three readers, 512 MiB apart in sectors
    ts = 0.0
    for _ in range(300):
        for i, start in enumerate(ends):
            stats.add(_event(ts, start, size=65536))
            stats.add(_event(ts + 0.001, start, size=65536, issue=False))
            ends[i] = start + 128
            ts += 0.002
    summary = stats.summary(ts)
    assert summary["streams"] == 3
    assert summary["sequential_share"] > 0.99
    assert summary["seek_median_bytes"] > 256 << 20  # every switch between readers is a seek


def test_random_requests_open_no_stream_and_the_stream_table_stays_bounded() -> None:
    stats = DeviceStats(1 << 40)
    for i in range(5000):
        sector = (i * 7919 * 2654435761) % (1 << 37)
        stats.add(_event(i * 0.001, sector))
    assert len(stats.total.streams.heads) == STREAMS
    assert stats.summary(5.0)["streams"] == 0
    assert len(stats.inflight) == INFLIGHT  # never completed: the oldest are dropped


def test_the_hot_set_is_where_most_requests_went() -> None:
    footprint = Footprint(1 << 30, FOOTPRINT_CHUNKS)
    for _ in range(90):
        footprint.add(0, 4096)  # one hot MiB
    for i in range(10):
        footprint.add((i + 1) << 20, 4096)  # ten cold ones
    touched, hot = footprint.summary()
    assert touched == 11 << 20
    assert hot == 1 << 20


def test_a_large_device_keeps_its_footprint_map_bounded() -> None:
    footprint = Footprint(1 << 44, FOOTPRINT_CHUNKS)  # 16 TiB
    assert len(footprint.counts) <= FOOTPRINT_CHUNKS
    footprint.add((1 << 44) + 4096, 4096)  # past the end: ignored
    assert footprint.summary() == (0, 0)


def test_processes_beyond_the_bound_fold_into_other() -> None:
    stats = DeviceStats(1 << 30)
    for i in range(40):
        stats.add(_event(i * 0.01, i * 1000, comm=f"p{i}", pid=i + 1))
    names = [p["comm"] for p in stats.summary(1.0)["by_process"]]
    assert len(names) == 16 and "other" in names


def _records(name: str) -> tuple[list[Issue], list[Completion]]:
    lines = (FIXTURES / f"{name}.txt").read_text().splitlines()
    return split(r for r in map(parse_record, lines) if r is not None)


def _in_batches(issues: list[Issue], completions: list[Completion], size: int) -> DeviceStats:
    """The records fed `size` events of time at a time, as the reader's polls cut them."""
    stats = DeviceStats(512 << 20)
    times = sorted({r[0] for r in issues} | {r[0] for r in completions})
    for cut in range(0, len(times), size):
        low, high = times[cut], times[min(cut + size, len(times)) - 1]
        stats.add_records([r for r in issues if low <= r[0] <= high],
                          [r for r in completions if low <= r[0] <= high])  # fmt: skip
    return stats


@pytest.mark.parametrize("name", ["random-mix", "buffered-streams", "fdatasync", "raw/mixed"])
def test_the_figures_do_not_depend_on_how_the_records_are_batched(name: str) -> None:
    issues, completions = _records(name)
    whole = _in_batches(issues, completions, 1 << 30).summary(2.0)
    for size in (1, 7, 100):
        assert _in_batches(issues, completions, size).summary(2.0) == whole, size


def test_a_second_process_parts_the_first_from_the_device_figures() -> None:
    """While one process issues everything its figures are the device's (kept once); when a
    second appears the first keeps the figures of its own requests only."""
    first = [(t * 1_000_000, 0, "R", t * 8, 4096, "app", 1) for t in range(200)]
    done = [(t * 1_000_000 + 500_000, 0, "R", t * 8, 4096) for t in range(200)]
    later = [(t * 1_000_000 + 200_000_000, 0, "W", 10**6 + t * 128, 65536, "other", 2)
             for t in range(50)]  # fmt: skip
    both = DeviceStats(1 << 30)
    both.add_records(first[:100], done[:100])
    both.add_records(first[100:], done[100:])
    both.add_records(later, [])
    alone = DeviceStats(1 << 30)
    alone.add_records(first, done)
    found = {p["comm"]: p for p in both.summary(1.0)["by_process"]}
    expected = alone.summary(1.0)
    del expected["by_process"]
    assert found["app"] == {"comm": "app", **expected}
    assert found["other"]["requests"] == 50 and found["other"]["read_share"] == 0
    assert both.summary(1.0)["requests"] == 250


def test_a_service_time_is_bucketed_from_whole_nanoseconds() -> None:
    """16 us from issue to completion is in the 16-32 us bucket. Times as float seconds lost
    it: 41136.244134 - 41136.244118 is 15.999998 us, the 8-16 bucket (p50 0.011 ms)."""
    stats = DeviceStats(1 << 30)
    stats.add(_event(41136.244118, 0))
    stats.add(_event(41136.244134, 0, issue=False))
    assert stats.summary(1.0)["service_ms"]["p50"] == 0.023  # 16 us x sqrt(2)


def test_a_sequential_run_moves_its_stream_head_as_one_request_at_a_time_would() -> None:
    """Runs of requests each continuing the one before are folded at once: over window
    boundaries, beside a second stream, and where a run's end meets another head's."""
    issues: list[Issue] = []
    t, sector = 0, 0
    for i in range(3000):
        t += 900_000 if i % 500 else 1_300_000_000  # long runs, some over a window and a gap
        if i % 97 == 50:  # another stream's request, now and then
            issues.append((t, 0, "R", (1 << 24) + i * 8, 4096, "app", 1))
            continue
        if i == 1200:  # a head ending where this run will pass
            issues.append((t, 0, "R", sector + 800 - 8, 4096, "app", 1))
            continue
        issues.append((t, 0, "R", sector, 4096, "app", 1))
        sector += 8
    one = DeviceStats(1 << 30)
    for issue in issues:
        one.add_records([issue], [])
    heads = list(one.total.streams.heads.items())  # before a summary resets the window's hits
    expected = one.summary(10.0)
    for size in (3, 64, 5000):
        batched = DeviceStats(1 << 30)
        for cut in range(0, len(issues), size):
            batched.add_records(issues[cut : cut + size], [])
        assert list(batched.total.streams.heads.items()) == heads, size  # hits and order
        assert batched.summary(10.0) == expected, size
    assert expected["sequential_share"] > 0.9


def test_a_completion_before_its_sectors_next_issue_is_not_matched_to_it() -> None:
    """A request issued before the capture completes, and the same sector is issued again
    later in the same batch: the completion is unmatched and the new request waits for its
    own (a batch matched all at once would have paired them, a negative service time)."""
    stats = DeviceStats(1 << 30)
    stats.add_records([(2000, 0, "R", 80, 4096, "app", 1)], [(1000, 0, "R", 80, 4096)])
    assert stats.unmatched == 1 and len(stats.inflight) == 1
    stats.add_records([], [(3000, 0, "R", 80, 4096)])
    assert stats.unmatched == 1 and not stats.inflight
    assert stats.summary(1.0)["service_ms"]["p50"] == 0.001  # 1 us: the first bucket
