"""A slice's figures from recorded diskstats readings and traced requests."""

from __future__ import annotations

import math

import pytest

from tests.online.recorded import TRACE, recorded_counters
from tuner.online.latency import Pairing, Request
from tuner.online.slices import MIN_P99_REQUESTS, figures, p99


def test_recorded_readings_give_iostat_figures() -> None:
    before, after = recorded_counters()
    s = figures("baseline", before, after, 5.0, [])
    # 476 reads of 7616 sectors (8 KiB each) in 5 s; 4080 ms busy; 32316 ms in queue.
    assert s.iops == pytest.approx(476 / 5)
    assert s.mbps == pytest.approx(7616 * 512 / 5 / 1e6)
    assert s.service_ms == pytest.approx(4080 / 476)
    assert s.queue_ms == pytest.approx(32316 / 476)
    assert s.score() == s.mbps  # no application metric: the device's throughput


def test_an_application_metric_is_the_score() -> None:
    before, after = recorded_counters()
    assert figures("x", before, after, 5.0, [], metric=73.0).score() == 73.0


def test_p99_needs_a_hundred_requests_of_a_size() -> None:
    before, after = recorded_counters()
    few = [Request(8192, float(i)) for i in range(MIN_P99_REQUESTS - 1)]
    assert figures("x", before, after, 5.0, few).p99_ms == {}
    enough = [Request(8192, float(i)) for i in range(1, 201)] + [Request(4096, 1.0)] * 3
    assert figures("x", before, after, 5.0, enough).p99_ms == {8: 198.0}


def test_a_size_class_of_a_few_requests_among_many_has_no_p99() -> None:
    before, after = recorded_counters()
    bulk = [Request(131072, 30.0)] * 1900
    metadata = [Request(4096, float(i)) for i in range(150)]  # 7 % of the requests
    assert figures("x", before, after, 5.0, bulk + metadata).p99_ms == {128: 30.0}


def test_p99_of_the_recorded_second() -> None:
    done = Pairing().feed(TRACE.read_text().splitlines())
    before, after = recorded_counters()
    s = figures("x", before, after, 1.0, done)
    assert set(s.p99_ms) == {8}
    assert s.p99_ms[8] == p99([r.ms for r in done])
    assert math.isnan(p99([]))


def test_an_idle_slice_has_no_service_time_rather_than_a_division_error() -> None:
    before, _ = recorded_counters()
    s = figures("x", before, before, 5.0, [])
    assert (s.mbps, s.iops, s.service_ms, s.queue_ms) == (0.0, 0.0, 0.0, 0.0)
