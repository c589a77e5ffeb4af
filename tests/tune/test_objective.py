"""The objective follows the workload: IOPS for small random requests, MB/s for streams."""

from __future__ import annotations

import math

import pytest

from tuner.trials.trial import TrialResult
from tuner.tune.objective import objective_for, objective_named


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"rw": "randread", "bs": "4k"}, "iops"),
        ({"rw": "randrw", "bs": "16k,64k"}, "iops"),
        ({"rw": "randread", "bs": "1M"}, "throughput"),
        ({"rw": "read", "bs": "4k"}, "throughput"),
        ({"rw": "write", "bs": "4k", "fdatasync": 1}, "throughput"),
        ({"readwrite": "randwrite"}, "iops"),
        ({"rw": "read", "percentage_random": "50", "bs": "8k"}, "iops"),
    ],
)
def test_the_objective_a_workload_calls_for(options: dict[str, str], expected: str) -> None:
    assert objective_for(options) == expected


def test_scores_are_higher_for_better_and_shown_in_their_unit() -> None:
    result = TrialResult(mbps=1.4, iops=350.0, p99_latency_us=4000.0, fio_bytes=1, device_bytes=1,
                         seconds=1.0)  # fmt: skip
    iops, mbps, latency = (objective_named(n) for n in ("iops", "throughput", "latency"))
    assert (iops.score(result), mbps.score(result), latency.score(result)) == (350.0, 1.4, 250.0)
    assert iops.value(result) == pytest.approx(-math.log(350.0))
    assert latency.value(result) == pytest.approx(math.log(4000.0))
    assert (iops.shown(352.4), mbps.shown(101.25), latency.shown(250.0)) == (
        "352 IOPS",
        "101.2 MB/s",
        "4000 µs p99",
    )
    assert iops.p99_rise is not None and mbps.p99_rise is None
    with pytest.raises(ValueError, match="use throughput, iops, latency"):
        objective_named("speed")
