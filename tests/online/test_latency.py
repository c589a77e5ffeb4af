"""The latency sampler's parsing and pairing, on a recorded trace; its instance's cleanup."""

from __future__ import annotations

import os
from pathlib import Path

from tests.online.recorded import TRACE
from tuner.online.latency import PREFIX, Pairing, parse_line, remove_stale, requests_by_size
from tuner.online.slices import p99


def test_issue_and_complete_lines_are_read() -> None:
    issue = ("fio-14225 [001] ..... 26725.944156: block_rq_issue: "
             "7,2 R 8192 () 3297120 + 16 be,0,4 [fio]")  # fmt: skip
    complete = ("ksoftirqd/1-22 [001] ..s.. 26725.950045: block_rq_complete: "
                "7,2 R () 3297120 + 16 be,0,4 [0]")  # fmt: skip
    assert parse_line(" " + issue) == ("issue", 26725.944156, 3297120, 16)
    assert parse_line(" " + complete) == ("complete", 26725.950045, 3297120, 16)


def test_flushes_and_other_lines_are_not_requests() -> None:
    flush = (
        " kworker/0:1-9 [000] ..... 5.000001: block_rq_issue: 7,2 FF 0 () 0 + 0 be,0,4 [kworker]"
    )
    assert parse_line(flush) is None
    assert parse_line("# tracer: nop") is None
    assert parse_line("") is None


def test_a_recorded_second_pairs_into_8k_requests_with_their_times() -> None:
    pairing = Pairing()
    lines = TRACE.read_text().splitlines()
    done = pairing.feed(lines)
    # The second began mid-flight: the completions of requests issued before it find no issue.
    assert 0 < pairing.unmatched <= 8  # at most the queue depth
    assert len(done) > 100
    assert {r.size_bytes for r in done} == {8192}
    times = [r.ms for r in done]
    # A modelled 7200 rpm disk: a seek and half a turn, some milliseconds, never zero or a second.
    assert 1.0 < sorted(times)[len(times) // 2] < 200.0
    assert p99(times) >= max(sorted(times)[: len(times) // 2])


def test_lines_fed_in_two_parts_pair_as_in_one() -> None:
    lines = TRACE.read_text().splitlines()
    whole = Pairing().feed(lines)
    split = Pairing()
    parts = split.feed(lines[:101]) + split.feed(lines[101:])
    assert parts == whole


def test_requests_are_classed_by_power_of_two_sizes() -> None:
    from tuner.online.latency import Request

    requests = [Request(4096, 1.0), Request(8192, 2.0), Request(12288, 3.0), Request(8192, 4.0)]
    assert list(requests_by_size(requests)) == [(4096, [1.0]), (8192, [2.0, 4.0]), (16384, [3.0])]


def test_an_instance_a_killed_process_left_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    dead = instances / f"{PREFIX}999999999"
    live = instances / f"{PREFIX}{os.getpid()}"
    other = instances / "someone-elses"
    for path in (dead, live, other):
        path.mkdir(parents=True)
    assert remove_stale(tmp_path) == [dead]
    assert live.exists() and other.exists()
