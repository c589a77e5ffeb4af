"""A peer tune's path rate (measured, or the link's speed when the measurement was only a
floor) and its time bound."""

from __future__ import annotations

import time

import pytest

from tuner.trials.flags import Flag
from tuner.trials.peer import PathMeasurement, Peer
from tuner.trials.route import Route
from tuner.trials.trial import TrialResult
from tuner.tune.session import PointTrial
from tuner.tune.transfer_peer import TuneBound, bounded, path_rate

PEER = Peer("10.77.0.2")
OLD_WMEM = 131072


def measured(rate_mbit: float) -> PathMeasurement:
    return PathMeasurement(PEER, rtt_ms=100.3, rate_mbit=rate_mbit, streams=8, seconds=5,
                           retransmits=0, congestion="bbr", address="10.77.0.2")  # fmt: skip


def test_a_rate_the_buffers_did_not_hold_back_is_the_paths() -> None:
    # Eight streams of 131072-byte buffers allow 83.6 Mbit/s at 100.3 ms; 190 is above it.
    assert path_rate(measured(190.0), 4 << 20, Route("wan0", 1500, 10000)) == (190.0, "measured")


def test_a_floor_gives_way_to_the_links_speed() -> None:
    # 61 Mbit/s of the 83.6 eight old buffers allow: held back, a floor.
    rate, how = path_rate(measured(61.0), OLD_WMEM, Route("wan0", 1500, 10000))
    assert rate == 10000.0 and how.startswith("wan0's link speed; this host's send buffers")


@pytest.mark.parametrize("route", [None, Route("tun0", 1500, None), Route("eth0", 1500, 10)])
def test_a_floor_without_a_faster_link_stays_a_floor(route: Route | None) -> None:
    rate, how = path_rate(measured(61.0), OLD_WMEM, route)
    assert rate == 61.0 and how.startswith("measured, a floor")


def test_no_trial_starts_past_the_bound() -> None:
    ran: list[object] = []

    def runner(point: object) -> PointTrial:
        ran.append(point)
        trial = TrialResult(mbps=1.0, iops=0.0, p99_latency_us=None, fio_bytes=1,
                            device_bytes=0, seconds=1.0, flags=tuple[Flag, ...]())  # fmt: skip
        return PointTrial(trial, {})

    now = time.monotonic()
    bounded(runner, now, bound_s=60)({})
    assert len(ran) == 1
    with pytest.raises(TuneBound, match=r"the tune passed its 60 s bound \(6\d s\): stopped"):
        bounded(runner, now - 61, bound_s=60)({})
    assert len(ran) == 1
