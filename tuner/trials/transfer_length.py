"""How long a transfer trial lasts: sized by the path it crosses, not fixed.

A TCP transfer is a transient before it is a rate: slow start doubles the congestion window
once per round trip from ten segments, and the receiver's autotuning grows its window about as
fast, so filling a path of bandwidth-delay product B takes about log2(B / 10 MSS) round trips.
On a 1 ms LAN that is milliseconds; on a 300 ms path carrying 500 Mbit/s (B = 18.75 MB) it is
over 3 s, and a 1 s ramp and 3 s measured window sees mostly slow start (issue 28: trials at
the right windows measured 0.18-13.8 Mbit/s of 500).

So the tune measures the path first (its RTT, and one run at a window above the product with a
report every round trip), finds where the per-RTT goodput stopped rising (`settle_index`), and
sizes every trial from that: the ramp lasts until then (plus two round trips), the measured
part spans MEASURE_RTTS round trips, and the user's `--ramp` and `--runtime` are floors. A trial
whose goodput still rises across its measured part (`still_rising`) was cut short of its
settle point: its figure is a transient's, flagged so it never wins. A sender whose congestion
control leaves its steady state on a timer (BBR's PROBE_RTT, every 10 s or so) is measured over
whole periods of it (`cycle_seconds`): a shorter part holds the probe or not by its phase, and
its figure then cannot tell BBR from reno (issue 28's long path).

Pure functions on iperf3's per-interval figures; the runs are tuner/tune/transfer_path.py's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass

MEASURE_RTTS = 30
"""Round trips a measured part spans at least: a loss-based sender's sawtooth and the delayed
ACKs average out over tens of round trips, and a window's figure is a rate only then."""
INTERVAL_LEAST_S = 0.1
"""iperf3's shortest report interval."""
INTERVAL_MOST_S = 2.0
INITIAL_WINDOW = 10
"""Segments a connection starts with (RFC 6928, Linux since 2.6.39)."""
RAMP_MARGIN_RTTS = 2
"""Round trips added after the settle point the probe saw: its report interval is one round
trip, so the point is known to within one, and a trial's own start jitters by about one."""
PROBE_SLOW_START_FACTOR = 3
"""The probe runs this many times the slow start the physics predicts before its measured
part: the receiver's autotuning lags the sender by a round trip or two, and a path whose
window still grows after that is reported as unsettled, not waited for."""
RAMP_MOST_S = 60
"""The longest ramp a trial may have: a 2 s RTT path's slow start (about 30 round trips to
fill a 125 MB product) fits; beyond it the trial is flagged instead."""
SETTLED_WITHIN = 0.10
"""Goodput within this share of the plateau counts as settled: iperf3's per-RTT figures on a
full lab path vary by 5-8 % (a 64 KiB segment burst more or less per interval)."""
RISE = 0.10
"""A measured part still rises when the median of its last third exceeds that of its first
third by more than this share: the per-interval noise (SETTLED_WITHIN) cancels in medians of
ten or more intervals, slow start's doubling does not."""
WINDOW = 3
"""Intervals whose median must reach the plateau: one lucky interval is not a settle point."""
PROBE_RTT_AFTER_S = {"bbr": 10.0}
"""Congestion controls that leave their steady state on a timer, and how long after their
least-RTT sample (net/ipv4/tcp_bbr.c, Linux's BBR v1: bbr_min_rtt_win_sec = 10): when the
sample is that old, BBR enters PROBE_RTT, cuts its window to bbr_cwnd_min_target (4 packets)
until the pipe drains, holds it for bbr_probe_rtt_mode_ms and one round trip, and restarts
the clock as it leaves. On the wan-long lab (500 Mbit/s, 300 ms) every PROBE_RTT cost 0.6 s
of the line, 11-14 s apart (tests/fixtures/iperf3/README.md): a long transfer pays about 5 %
for it, which a measured part of 9 s may or may not hold. Loss-based controls (reno, cubic)
have no such timer: their sawtooth is what MEASURE_RTTS averages out."""
PROBE_RTT_HOLD_S = 0.2
"""bbr_probe_rtt_mode_ms: the least PROBE_RTT holds its small window."""
PROBE_RTT_PERIODS = 2
"""Periods a measured part spans for such a control. One is not enough: the first PROBE_RTT
comes 10 s after the connection's last new least-RTT sample, and on a path whose delay
jitters by microseconds new least samples keep coming for seconds after the ramp (the lab's
first PROBE_RTT came 10-19 s into a run), so a part of one period after a 4 s ramp held none
in one run of two and measured reno's figure. Two periods hold one or two, as a long
transfer does (a period's cost shared by 11-14 s)."""


@dataclass(frozen=True)
class PathProbe:
    """What the probe run saw: the path's round trip, the goodput it settled at (the line's
    rate as TCP carries it), and when it settled (None: still rising at the probe's end)."""

    rtt_ms: float
    plateau_mbit: float
    settle_s: float | None
    interval_s: float

    @property
    def rise_rtts(self) -> int | None:
        """Round trips the goodput rose for before it settled."""
        if self.settle_s is None:
            return None
        return max(1, round(self.settle_s * 1000 / self.rtt_ms)) if self.rtt_ms else 1


@dataclass(frozen=True)
class TrialLength:
    """Every transfer trial's length: `ramp_s` left out (iperf3 -O), `measure_s` measured
    (-t), a report every `interval_s` (-i), and `why`, for people."""

    ramp_s: int
    measure_s: int
    interval_s: float
    why: str

    def document(self) -> dict[str, object]:
        """The length as `tune --json` shows it."""
        return {"ramp_s": self.ramp_s, "measure_s": self.measure_s,
                "interval_s": self.interval_s, "why": self.why}  # fmt: skip


ROUND_WITHIN = 0.05
"""A length within this share above a whole step rounds down to it: 30 RTTs of 100.3 ms are
3 s, not 4 (a second more per trial for 0.3 % more round trips)."""


def report_interval(rtt_ms: float) -> float:
    """iperf3's report interval for a path: one round trip rounded up to 0.1 s (a shorter
    interval aliases with the sender's once-per-RTT bursts; within ROUND_WITHIN of a step
    rounds down), within iperf3's bounds."""
    tenths = _whole(max(rtt_ms, 0.0) / 100) / 10
    return min(max(tenths, INTERVAL_LEAST_S), INTERVAL_MOST_S)


def slow_start_rtts(bdp_bytes: int, mtu: int) -> int:
    """Round trips slow start needs from INITIAL_WINDOW segments to a window of `bdp_bytes`
    (at least one)."""
    segment = max(mtu - 52, 536)
    first = INITIAL_WINDOW * segment
    return max(1, math.ceil(math.log2(bdp_bytes / first))) if bdp_bytes > first else 1


def growth_horizon_s(rtt_ms: float, bdp_bytes: int, mtu: int) -> float:
    """The longest a TCP window can still be growing toward the path's product, in seconds:
    slow start's round trips, or half the product in segments at one segment a round trip
    (congestion avoidance climbing back from a halved window), the longer. A rise in goodput
    later than this is not the window's growth (on a 1 ms, 1 Gbit/s path it is 43 ms; a
    rise over seconds there is the machine's CPU, not TCP)."""
    segments = bdp_bytes / max(mtu - 52, 536)
    return max(slow_start_rtts(bdp_bytes, mtu), segments / 2) * rtt_ms / 1000


def probe_seconds(rtt_ms: float, bdp_bytes: int, mtu: int, runtime_s: float) -> int:
    """The probe run's length: PROBE_SLOW_START_FACTOR x the predicted slow start, then a
    measured part as a trial's (measure_seconds), whole seconds as iperf3 takes them."""
    ramp = PROBE_SLOW_START_FACTOR * slow_start_rtts(bdp_bytes, mtu) * rtt_ms / 1000
    return math.ceil(min(ramp, RAMP_MOST_S) + measure_seconds(rtt_ms, runtime_s))


def measure_seconds(rtt_ms: float, runtime_s: float) -> int:
    """A trial's measured part: MEASURE_RTTS round trips or `runtime_s`, the longer, in
    whole seconds (at least one)."""
    return max(1, math.ceil(runtime_s - 1e-9), _whole(MEASURE_RTTS * rtt_ms / 1000))


def probe_rtt_period_s(congestion: str, rtt_ms: float) -> float | None:
    """The shortest time between two of `congestion`'s timed probes on a path of `rtt_ms`
    (None: it has none): PROBE_RTT_AFTER_S, then the probe itself, a round trip for the
    pipe to drain to four packets and PROBE_RTT_HOLD_S or one more round trip, the longer
    (the clock restarts only as the probe ends)."""
    after = PROBE_RTT_AFTER_S.get(congestion)
    if after is None:
        return None
    rtt = max(rtt_ms, 0.0) / 1000
    return after + rtt + max(PROBE_RTT_HOLD_S, rtt)


def cycle_seconds(measure_s: int, congestion: str, rtt_ms: float) -> int:
    """A trial's measured seconds for a sender running `congestion`: `measure_s`, or
    PROBE_RTT_PERIODS whole periods of its timed probe (probe_rtt_period_s), the longer, so
    that its figure pays for the probe as a long transfer does whatever the probe's phase."""
    period = probe_rtt_period_s(congestion, rtt_ms)
    if period is None:
        return measure_s
    return max(measure_s, math.ceil(PROBE_RTT_PERIODS * period - 1e-9))


def probe_cost_share(congestion: str, rtt_ms: float) -> float:
    """The share of the line a long transfer running `congestion` loses to its timed probe
    on a path of `rtt_ms` (0.0: it has none): the probe's drained round trip and its hold,
    max(PROBE_RTT_HOLD_S, a round trip), once a period (probe_rtt_period_s), with next to
    nothing delivered meanwhile (a window of four packets). 0.6 s of 10.6 s, 5.7 %, at 300 ms
    (the wan-long runs lost 5-6 %); 0.22 s of 10.22 s, 2.2 %, at 20 ms."""
    period = probe_rtt_period_s(congestion, rtt_ms)
    if period is None:
        return 0.0
    return (period - PROBE_RTT_AFTER_S[congestion]) / period


def screen_discount(measure_s: int, congestion: str, rtt_ms: float) -> float:
    """The share a screening trial's figure is scored below what it measured: the probe's
    cost (probe_cost_share) when its measured part of `measure_s` spans fewer than
    PROBE_RTT_PERIODS periods (cycle_seconds), else 0.0. Such a trial holds the probe or not
    by its phase, mostly not (the first comes PROBE_RTT_AFTER_S after the last new least
    RTT, so never within a trial shorter than that), so its figure is the control's without
    the probe: optimistic by the cost a long transfer pays. Scored at the expected figure,
    a tie with a control without a probe is no longer a lead."""
    if cycle_seconds(measure_s, congestion, rtt_ms) <= measure_s:
        return 0.0
    return probe_cost_share(congestion, rtt_ms)


def decide_seconds(measure_s: int, congestion: str, rtt_ms: float, resolvable: float) -> int:
    """A deciding trial's measured seconds (confirmation's, whose figures are the claim):
    whole periods of the control's timed probe (cycle_seconds) when the probe costs more of
    the line than `resolvable`, the least gain the confirmation tells from its own noise;
    else `measure_s`. A candidate passes only with a gain beyond that least one, so a probe
    costing less cannot carry a candidate worse than the baseline through: periods would
    cost their length (21 s a trial) for a difference the rounds cannot see."""
    if probe_cost_share(congestion, rtt_ms) <= resolvable:
        return measure_s
    return cycle_seconds(measure_s, congestion, rtt_ms)


def compared_seconds(
    measure_s: int, congestion: str, compared: Collection[str], rtt_ms: float, resolvable: float
) -> int:
    """A deciding trial's measured seconds when confirmation compares points running the
    congestion controls `compared`: `measure_s` when they all run one (each pays its timed
    probe alike, so the ratio the claim rests on holds without spanning it), else
    decide_seconds's. The wan-long lab runs bbr by default: its tunes comparing bbr with bbr
    took 22 s a confirmation trial for a probe whose cost cancelled."""
    if len(set(compared)) <= 1:
        return measure_s
    return decide_seconds(measure_s, congestion, rtt_ms, resolvable)


def longest_measure(measure_s: int, rtt_ms: float) -> int:
    """The longest measured part any congestion control's trial gets (cycle_seconds): what
    a source file must last."""
    return max(cycle_seconds(measure_s, c, rtt_ms) for c in ("", *PROBE_RTT_AFTER_S))


def _whole(value: float) -> int:
    """`value` rounded up to a whole number, or down when within ROUND_WITHIN above one."""
    return math.ceil(value / (1 + ROUND_WITHIN) - 1e-9) if value > 0 else 0


def still_rising(intervals: Sequence[float]) -> bool:
    """Whether per-interval goodput still rises across `intervals`: the median of the last
    third above the first third's by more than RISE (fewer than three intervals: unknown,
    False)."""
    third = len(intervals) // 3
    if third < 1:
        return False
    first = statistics.median(intervals[:third])
    last = statistics.median(intervals[-third:])
    return last > first * (1 + RISE) and last > 0


def settle_index(intervals: Sequence[float], tail: int) -> int | None:
    """The first interval from which goodput stays at its plateau: the median of WINDOW
    intervals from it within SETTLED_WITHIN of the plateau, the median of the last `tail`
    intervals. None when the tail itself still rises (the run ended before the settle
    point) or there are too few intervals."""
    if tail < WINDOW or len(intervals) < tail:
        return None
    last = intervals[-tail:]
    if still_rising(last):
        return None
    plateau = statistics.median(last)
    for index in range(len(intervals) - WINDOW + 1):
        if statistics.median(intervals[index : index + WINDOW]) >= (1 - SETTLED_WITHIN) * plateau:
            return index
    return None


def read_probe(intervals: Sequence[float], rtt_ms: float, interval_s: float,
               measure_s: int) -> PathProbe:  # fmt: skip
    """What the probe's per-interval goodput (`intervals`, Mbit/s, none left out) says: the
    plateau over its last `measure_s` and when it was reached."""
    tail = min(len(intervals), max(WINDOW, round(measure_s / interval_s)))
    index = settle_index(intervals, tail)
    plateau = statistics.median(intervals[-tail:]) if intervals else 0.0
    settle = None if index is None else round(index * interval_s, 3)
    return PathProbe(rtt_ms, round(plateau, 3), settle, interval_s)


def trial_length(probe: PathProbe, runtime_s: float, ramp_s: float, probe_s: int) -> TrialLength:
    """Each trial's length from the probe (the module's docstring): `runtime_s` and `ramp_s`
    (--runtime, --ramp) are floors; a probe that never settled within its `probe_s` gives the
    longest ramp it tried (its ramp part) and says so."""
    measure = measure_seconds(probe.rtt_ms, runtime_s)
    rtt = f"{probe.rtt_ms:.3g} ms"
    if probe.settle_s is None:
        ramp = min(RAMP_MOST_S, max(probe_s - measure, math.ceil(ramp_s)))
        reason = f"goodput still rose at the end of a {probe_s} s probe (RTT {rtt})"
    else:
        needed = probe.settle_s + RAMP_MARGIN_RTTS * probe.rtt_ms / 1000
        ramp = min(RAMP_MOST_S, math.ceil(max(needed, ramp_s) - 1e-9))
        floor = " (--ramp's floor)" if ramp_s >= needed else ""
        rose = (f"goodput rose for {probe.rise_rtts} RTTs of {rtt} ({probe.settle_s:.3g} s)"
                if probe.settle_s else f"goodput was at its plateau from the first report "
                f"(RTT {rtt})")  # fmt: skip
        reason = f"{rose}{floor}"
    rtts = measure * 1000 / probe.rtt_ms if probe.rtt_ms else float("inf")
    span = f"{rtts:.0f} RTTs" if rtts < 1e6 else "many RTTs"
    floor = " (--runtime's floor)" if runtime_s >= MEASURE_RTTS * probe.rtt_ms / 1000 else ""
    why = f"ramp {ramp} s: {reason}; measured {measure} s = {span}{floor}"
    return TrialLength(ramp, measure, probe.interval_s, why)


def fit_within(ramp_s: int, measure_s: int, left_s: float | None) -> tuple[int, int]:
    """A trial's ramp and measured seconds cut to end within `left_s` seconds (what a --time
    bound leaves for both; None: no bound): the measured part gives way first, down to one
    second (fewer round trips, a noisier figure of the same steady state), then the ramp (a
    trial left too short a ramp measures the window's growth, is flagged still rising and
    never wins: the bound is kept, never overrun)."""
    if left_s is None or ramp_s + measure_s <= left_s:
        return ramp_s, measure_s
    measure = min(measure_s, max(1, math.floor(left_s - ramp_s)))
    ramp = min(ramp_s, max(0, math.floor(left_s - measure)))
    return ramp, measure
