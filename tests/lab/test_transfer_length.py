"""Transfer trials sized by the path, on two lab paths of one rate: a 200 ms path gets a longer
ramp and measured part than a 2 ms one, and a trial cut short of its settle point (the old
fixed trial on a long path: slow start inside the measured seconds) is flagged `unsettled`,
while the same point at the length the path got is not.

About 40 s: each path is probed once (the long one for 3 x its 8-RTT slow start plus 30 RTTs,
about 11 s), then two trials on the long path (2 s cut short, 9 s sized). The figures are
orderings of lengths the physics sets (slow start takes round trips), not rates held to a
tolerance, and nothing outside the lab's namespaces changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from tuner.lab import lab_down, lab_up, parse_spec
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.sysroot import live_sysroot
from tuner.tune.transfer import (
    RMEM,
    WMEM,
    TransferEnds,
    lab_path,
    transfer_trial,
    window_high,
)
from tuner.tune.transfer_path import SizedTrials, measure_rtt, size_trials

pytestmark = pytest.mark.lab

RATE = 100
SPEC = """name: {name}
network:
  rate_mbit: 100
  rtt_ms: {rtt}
  sender: {{tcp_rmem: 4096 87380 174760, tcp_wmem: 4096 16384 131072}}
  receiver: {{tcp_rmem: 4096 87380 174760, tcp_wmem: 4096 16384 131072}}
"""


@contextmanager
def sized_path(rtt_ms: int) -> Iterator[tuple[SizedTrials, TunableEngine, TransferEnds]]:
    """A lab path of RATE Mbit/s and `rtt_ms`, its trials sized with --runtime 1, --ramp 0."""
    name = f"path-{rtt_ms}ms"
    net = lab_up(parse_spec(SPEC.format(name=name, rtt=rtt_ms), f"{name}.yaml", name)).network
    try:
        assert net is not None
        with Journal() as journal, TunableEngine(live_sysroot(), journal) as engine:
            ends = lab_path(net)
            rtt = measure_rtt(engine, ends)
            sized, _ = size_trials(engine, ends, window_high(RATE, rtt[0]), 1.0, 0.0, rtt)
            print(f"\n{rtt_ms} ms: {sized.line()}")
            yield sized, engine, ends
    finally:
        lab_down()


# Its own labs (random ids) in its own state directory, the trials' writes inside their
# namespaces only; the figures are orderings of lengths slow start sets (round trips), not
# rates held to a tolerance.
@pytest.mark.lab_parallel
def test_a_long_path_gets_longer_trials_and_a_cut_short_trial_is_flagged(state: Path) -> None:
    with sized_path(2) as (short, _, _):
        pass
    assert short.probe.rtt_ms < 5
    with sized_path(200) as (long, engine, ends):
        assert 190 < long.probe.rtt_ms < 230
        assert long.length.ramp_s > short.length.ramp_s
        assert long.length.measure_s > short.length.measure_s
        # 30 round trips (a length within 5 % above a whole second rounds down to it)
        assert long.length.measure_s * 1000 * 1.05 >= 30 * long.probe.rtt_ms
        assert long.probe.rise_rtts is not None and long.probe.rise_rtts >= 3
        assert long.length.why.startswith(f"ramp {long.length.ramp_s} s: goodput rose for ")
        # A window above the path's product at both ends, as the search's best point has.
        window = window_high(RATE, long.probe.rtt_ms)
        assert ends.receiver is not None
        wide = {(WMEM, ends.sender): (4096, 16384, window),
                (RMEM, ends.receiver): (4096, 87380, window)}  # fmt: skip
        cut = replace(ends.options(2, 0, files=False), interval=long.length.interval_s)
        flagged = transfer_trial(engine, wide, ends, cut)[1].result.flags
        assert [f.kind for f in flagged] == ["unsettled"], flagged
        assert "goodput still rose from" in flagged[0].message
        full = replace(cut, seconds=long.length.measure_s, omit=long.length.ramp_s)
        settled = transfer_trial(engine, wide, ends, full)[1].result
        print(f"cut short: {flagged[0].message}; sized: {settled.mbps * 8:.1f} Mbit/s")
        assert settled.flags == ()
