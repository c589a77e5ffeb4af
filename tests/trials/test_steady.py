"""How long a disk trial lasts (tuner/trials/steady.py): floors from --runtime and from the
readahead windows a stream must consume, fio's steady-state options, and the judgement of a
window that reached its ceiling."""

from __future__ import annotations

import pytest

from tuner.trials.flags import NOT_STEADY
from tuner.trials.steady import (
    SS_DUR_S,
    attained,
    floor_s,
    in_flight_bytes,
    ss_options,
    unsettled,
    window_bounds,
    within_noise,
)
from tuner.tune import guards

MiB = 1 << 20


def test_runtime_is_a_floor_raised_by_the_windows_every_stream_must_consume() -> None:
    # Six streams of 8 MiB windows at 80 MB/s: 4 windows each is 192 MiB, 2.5 s.
    assert floor_s(6, 8 * MiB, 80e6) == pytest.approx(4 * 6 * 8 * MiB / 80e6)
    assert window_bounds(3.0, 1.0, streams=6, readahead=8 * MiB, rate_bytes_s=80e6).floor_s == 3.0
    # Twelve streams of 16 MiB windows at 80 MB/s need 10 s: --runtime 3 is raised, and why.
    length = window_bounds(3.0, 1.0, streams=12, readahead=16 * MiB, rate_bytes_s=80e6)
    assert length.floor_s == pytest.approx(10.07, rel=0.01)
    assert "12 stream(s) x 4 readahead windows of 16384 KB at 80 MB/s" in length.why
    assert length.ceiling_s >= length.floor_s
    # A random reader (no window given) keeps --runtime; the caller's ceiling (what --time
    # leaves) bounds its own, never lengthens it: 20 s left still stops at 2 x fio's 4 s.
    assert window_bounds(3.0, 1.0, ceiling_s=20.0) == window_bounds(3.0, 1.0, ceiling_s=20.0)
    assert window_bounds(3.0, 1.0, ceiling_s=20.0).ceiling_s == 8.0
    assert window_bounds(3.0, 1.0, ceiling_s=6.0).ceiling_s == 6.0
    assert window_bounds(3.0, 1.0).why == "--runtime 3 s"


def test_a_physics_floor_above_what_the_time_bound_leaves_is_cut_to_it() -> None:
    """Twelve streams of 16 MiB at 80 MB/s need 10 s; with 5 s left of a --time bound the
    trial gets 5 s (and may be flagged), never 10 s past the bound."""
    length = window_bounds(3.0, 1.0, streams=12, readahead=16 * MiB, rate_bytes_s=80e6,
                          ceiling_s=5.0)  # fmt: skip
    assert (length.floor_s, length.ceiling_s) == (5.0, 5.0)


def test_the_ceiling_is_never_below_the_floor_nor_fios_window() -> None:
    assert window_bounds(10.0, 1.0, ceiling_s=2.0).ceiling_s == 10.0
    assert window_bounds(3.0, 0.0, ceiling_s=1.0).ceiling_s == SS_DUR_S


def test_a_runtime_too_short_to_judge_is_a_quick_look_run_as_given() -> None:
    """--runtime 1 (the tests' quick trials): twice it cannot hold fio's 4 s window, so the
    trial runs 1 s unjudged rather than 4-8 s; 2 s and the default 3 s are judged."""
    quick = window_bounds(1.0, 0.0)
    assert (quick.floor_s, quick.ceiling_s, quick.judged) == (1.0, 1.0, False)
    assert "quick look" in quick.why
    assert window_bounds(2.0, 0.0).judged and window_bounds(3.0, 1.0).judged
    # A floor the physics raises is judged, whatever --runtime asked.
    assert window_bounds(1.0, 0.0, streams=6, readahead=4 * MiB, rate_bytes_s=50e6).judged


def test_fio_judges_the_window_once_the_floor_has_passed() -> None:
    options = ss_options(window_bounds(10.0, 1.0))
    assert options == {"steadystate": "bw_slope:3%", "ss_dur": "4000ms", "ss_ramp": "6000ms"}
    assert ss_options(window_bounds(3.0, 1.0))["ss_ramp"] == "0ms"


def test_in_flight_readahead_is_two_windows_per_stream() -> None:
    assert in_flight_bytes(6, 4 * MiB) == 48 * MiB
    assert in_flight_bytes(0, 4 * MiB) == 8 * MiB


def test_a_flat_scatter_is_steady_and_a_ramp_is_not() -> None:
    # The modelled disk's six streams at 4 MiB: 5-10 % from second to second, no trend.
    assert within_noise([100.0, 92.0, 104.0, 95.0])
    # Readahead windows still growing: +10 % a second, little scatter.
    assert not within_noise([60.0, 66.5, 72.8, 79.9])
    assert not within_noise([1.0, 2.0])  # too few to judge


def test_fios_json_says_whether_the_window_settled() -> None:
    flat = {"attained": 0, "data": {"bw": [100, 92, 104, 95]}}
    ramp = {"attained": 0, "data": {"bw": [60, 66, 73, 80]}}
    assert attained({"jobs": [{"steadystate": {"attained": 1}}]}) is True
    assert attained({"jobs": [{"steadystate": flat}]}) is True
    assert attained({"jobs": [{"steadystate": ramp}]}) is False
    assert attained({"jobs": [{"read": {}}]}) is None
    # Still trending, but its last 4 s averaged within 5 % of the window's figure: the figure
    # is the steady part's. A ramp from 60 to 80 over a window that averaged 65 is not.
    late = {"attained": 0, "data": {"bw": [60, 66, 73, 80], "bw_mean": 69.75}}
    assert attained({"jobs": [{"steadystate": late, "read": {"bw_bytes": 68}}]}) is True
    assert attained({"jobs": [{"steadystate": late, "read": {"bw_bytes": 60}}]}) is False


def test_an_unsettled_trial_is_never_told_and_says_why() -> None:
    flag = unsettled(window_bounds(3.0, 1.0), 6.4)
    assert flag.kind == NOT_STEADY
    assert "after 6.4 s (floor 3.0 s: --runtime 3 s; ceiling 8.0 s)" in flag.message
    assert guards.policy([flag]) == guards.SKIP
    with pytest.raises(guards.Unmeasurable, match="--time"):
        guards.check_baseline([flag], 1)
