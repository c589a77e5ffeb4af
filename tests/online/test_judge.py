"""The slice judge: paired ratios against drifting baselines, verdicts, the latency bound."""

from __future__ import annotations

import pytest

from tuner.online.judge import harm, latency_rise, paired_ratios, queue_rise, verdict
from tuner.online.slices import SliceFigures


def slice_(mbps: float, p99: dict[int, float] | None = None, iops: float = 100.0,
           queue_ms: float = 10.0, metric: float | None = None,
           times: dict[int, tuple[float, ...]] | None = None) -> SliceFigures:  # fmt: skip
    return SliceFigures("s", 10.0, mbps, iops, 5.0, queue_ms, p99 or {}, metric,
                        latencies=times or {})  # fmt: skip


def spread(top: float, n: int = 200, slow: int = 0, slow_ms: float = 0.0) -> tuple[float, ...]:
    """n request times spread evenly up to `top`, the last `slow` of them at `slow_ms`."""
    return tuple(top * (i + 1) / n for i in range(n - slow)) + (slow_ms,) * slow


def test_a_workload_that_drifts_is_cancelled_by_the_baselines_around_each_slice() -> None:
    # The workload's own rate climbs 10 % a slice (a cache warming); the candidate adds 5 %.
    rate = [100 * 1.1**i for i in range(7)]
    baselines = [slice_(rate[i]) for i in (0, 2, 4, 6)]
    candidates = [slice_(rate[i] * 1.05) for i in (1, 3, 5)]
    ratios = paired_ratios(baselines, candidates)
    assert ratios == pytest.approx([1.05] * 3)
    judged = verdict(baselines, candidates)
    assert judged.outcome == "better"
    assert judged.gain == pytest.approx(1.05)
    # Compared with the first baseline alone, the drift would read as a 33 % gain.
    assert candidates[-1].mbps / baselines[0].mbps > 1.3


def test_noise_larger_than_the_effect_is_undecided_and_a_clear_loss_worse() -> None:
    baselines = [slice_(100), slice_(100), slice_(100)]
    assert verdict(baselines, [slice_(112), slice_(93)]).outcome == "undecided"
    assert verdict(baselines, [slice_(60), slice_(62)]).outcome == "worse"
    assert verdict(baselines[:2], [slice_(300)]).high == float("inf")  # one pair: no noise known


def test_the_application_metric_decides_over_the_device() -> None:
    # Larger readahead: the device moves more bytes, the application does less work.
    baselines = [slice_(50, metric=70.0) for _ in range(3)]
    candidates = [slice_(90, metric=60.0), slice_(95, metric=61.0)]
    assert verdict(baselines, candidates).outcome == "worse"


def test_latency_is_compared_within_a_size_class() -> None:
    before = [slice_(100, {8: 20.0, 128: 40.0}), slice_(100, {8: 20.0, 128: 44.0})]
    assert latency_rise(slice_(100, {8: 30.0, 128: 42.0}), before) == pytest.approx(0.5)
    # Larger requests take longer: no class in common, no latency verdict.
    assert latency_rise(slice_(100, {512: 90.0}), before) is None


def test_the_bound_names_the_rise() -> None:
    before = [slice_(100, {8: 20.0})]
    within = slice_(100, {8: 23.0}, times={8: spread(23.3)})
    assert harm(within, before, 0.2, traced=True) is None
    slower = slice_(100, {8: 30.0}, times={8: spread(30.3)})  # every request a half slower
    assert harm(slower, before, 0.2, traced=True) == (
        "p99 latency rose 50 % over the baseline (bound 20 %)"
    )


def test_a_few_slow_requests_are_a_stall_not_a_rise() -> None:
    # 3 of 200 requests held up by a stall of the host: the p99 triples, the workload's
    # requests are as fast as before. Counted against the binomial spread it is no rise.
    before = [slice_(100, {8: 20.0})]
    stalled = slice_(100, {8: 60.0}, times={8: spread(20.0, slow=3, slow_ms=60.0)})
    assert harm(stalled, before, 0.2, traced=True) is None
    many = slice_(100, {8: 60.0}, times={8: spread(20.0, slow=12, slow_ms=60.0)})
    assert harm(many, before, 0.2, traced=True) is not None


def test_without_tracing_time_in_queue_stands_in_for_like_sized_requests_only() -> None:
    before = [slice_(100, iops=100, queue_ms=10.0)]
    slower = slice_(100, iops=100, queue_ms=15.0)
    assert queue_rise(slower, before) == pytest.approx(0.5)
    assert harm(slower, before, 0.2, traced=False) is not None
    # Requests four times larger: their queue time says nothing about harm.
    assert queue_rise(slice_(100, iops=25, queue_ms=40.0), before) is None
    # Traced, a slice without enough requests yet is not judged on queue time.
    assert harm(slower, before, 0.2, traced=True) is None


def test_t_quantile_is_students_t_without_loading_scipy_for_the_default_level() -> None:
    from scipy import stats

    from tuner.online.judge import T_975, t_quantile

    for freedom in range(1, len(T_975) + 3):
        expected = float(stats.t.ppf(0.975, freedom))
        assert t_quantile(0.95, freedom) == pytest.approx(expected, rel=1e-9)
    assert t_quantile(0.9, 3) == pytest.approx(float(stats.t.ppf(0.95, 3)), rel=1e-12)


def test_the_online_tune_starts_without_scipy() -> None:
    """The online command's imports leave scipy out: it starts on a live host, where scipy.stats
    cost 0.9 s of CPU (four fifths of the start) during the first baseline slice."""
    import subprocess
    import sys

    probe = (
        "import sys, tuner.commands.tune_online; print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('scipy', 'numpy', 'skopt')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"
