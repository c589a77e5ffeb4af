"""A transfer tune against a named peer (`tune --workload disk-to-network --peer HOST`).

This host is the sender; the peer runs `iperf3 -s` and is out of reach, so the search holds
this host's part only (tcp_wmem, congestion control, and readahead on the source's device
when a --target directory gives the transfer a source file). What the peer would need is the
explanation's to say (transfer_explain.py).

The path's rate is not known in advance as the lab's is: the measurement that checks the peer
first (tuner/trials/peer.py, eight streams) gives it, or only a floor when this host's send
buffers held those streams back; the search then sizes its windows for the speed of the
interface the path leaves by, when the driver reports one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import replace

from tuner.errors import IotunerError
from tuner.search.space import HOST, Point
from tuner.trials.peer import PathMeasurement
from tuner.trials.route import Route
from tuner.trials.targets import TrialTarget
from tuner.trials.transfer import Ends
from tuner.tune.session import PointTrial, Runner
from tuner.tune.transfer import SOURCE_MARGIN, TransferEnds

TUNE_BOUND_S = 900.0
"""The most a peer tune may take from its first measurement: no trial starts after it (each
trial is bounded by iperf3's own time and a margin), so a path that turned slow or a peer that
answers late ends the tune, settings restored, instead of holding them for an hour."""
MAX_SOURCE_BYTES = 4 << 30
"""The largest source file a peer tune writes in its --target directory."""
DEFAULT_MTU = 1500


class TuneBound(IotunerError):
    """The tune passed TUNE_BOUND_S; exit code 1."""


def path_rate(measured: PathMeasurement, wmem_max: int, route: Route | None) -> tuple[float, str]:
    """The rate (Mbit/s) the search sizes windows for, and where it comes from: the measured
    rate, unless this host's send buffers held the measurement back (it is a floor then) and
    the interface toward the peer reports a higher speed."""
    if measured.send_cap_mbit(wmem_max) is None:
        return measured.rate_mbit, "measured"
    floor = "this host's send buffers held the measurement back"
    if route is not None and route.speed_mbit and route.speed_mbit > measured.rate_mbit:
        return float(route.speed_mbit), f"{route.interface}'s link speed; {floor}"
    return measured.rate_mbit, f"measured, a floor: {floor}"


def peer_path(measured: PathMeasurement, route: Route | None, rate_mbit: float) -> TransferEnds:
    """This host (its "host" settings) sending to the peer at the address iperf3 resolved,
    memory at both ends (to measure the path before a source file is sized)."""
    ends = Ends(None, None, measured.address or measured.peer.host, measured.peer.port)
    mtu = route.mtu if route is not None else DEFAULT_MTU
    return TransferEnds(ends, HOST, None, rate_mbit, mtu, listening=True)


@contextlib.contextmanager
def peer_ends(
    measured: PathMeasurement,
    route: Route | None,
    rate_mbit: float,
    source_dir: str | None,
    seconds: float,
) -> Iterator[TransferEnds]:
    """This host (its "host" settings) sending to the peer at the address iperf3 resolved,
    with a scratch source file in `source_dir` sized for `seconds` at `rate_mbit` (at most
    MAX_SOURCE_BYTES) when one is given; the file is removed on leaving."""
    with contextlib.ExitStack() as stack:
        source = None
        if source_dir is not None:
            size = min(int(rate_mbit * 1e6 / 8 * seconds * SOURCE_MARGIN) + (16 << 20),
                       MAX_SOURCE_BYTES)  # fmt: skip
            source = stack.enter_context(TrialTarget.scratch(source_dir, size))
        yield replace(peer_path(measured, route, rate_mbit), source=source)


def bounded(runner: Runner, started: float, bound_s: float = TUNE_BOUND_S) -> Runner:
    """`runner`, refusing to start a trial once `bound_s` seconds have passed since `started`
    (a time.monotonic() value): TuneBound, one line."""

    def run(point: Point) -> PointTrial:
        spent = time.monotonic() - started
        if spent > bound_s:
            raise TuneBound(f"the tune passed its {bound_s:.0f} s bound ({spent:.0f} s): "
                            "stopped before the next trial")  # fmt: skip
        return runner(point)

    return run
