"""Measure the path before a transfer tune, and size its trials from it.

First the round trip: `ping` from the sender (five echoes, the least: the path's own, without
queues), or, where ICMP does not pass, TCP's own least RTT from a one-second iperf3 run. Then
one probe run, memory to memory, at the largest socket buffers the search tries (so its settle
point holds for every candidate: a window above the path's product grows no slower), with a
report every round trip and nothing left out; where its per-RTT goodput stopped rising is the
ramp every trial gets, and its plateau is what the path carries (tuner/trials/transfer_length.py).
The buffers are applied through the TunableEngine and restored after the probe.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, replace

from tuner.trials.transfer import TransferResult
from tuner.trials.transfer_length import (
    PathProbe,
    TrialLength,
    growth_horizon_s,
    measure_seconds,
    probe_seconds,
    read_probe,
    report_interval,
    trial_length,
)
from tuner.tunables.engine import TunableEngine
from tuner.tunables.netns import in_netns
from tuner.tune.transfer import RMEM, WMEM, TransferEnds, buffer_triple, transfer_trial

PINGS = 5
PING_TIMEOUT_S = 30.0
MAX_PING_BYTES = 64 << 10
_SUMMARY = re.compile(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms")


@dataclass(frozen=True)
class SizedTrials:
    """The path as measured (`probe`, how its RTT was found) and the trials' length."""

    probe: PathProbe
    rtt_source: str
    length: TrialLength
    window: int
    horizon_s: float = float("inf")

    def document(self) -> dict[str, object]:
        """The `trial_length` entry of `tune --json`."""
        return {**self.length.document(), "rtt_ms": self.probe.rtt_ms,
                "rtt_from": self.rtt_source, "probe_window_bytes": self.window,
                "carried_mbit": self.probe.plateau_mbit,
                "settled_after_s": self.probe.settle_s}  # fmt: skip

    def line(self) -> str:
        """One line for people: the path and why trials last what they last."""
        return (f"path: RTT {self.probe.rtt_ms:.3g} ms ({self.rtt_source}), carried "
                f"{self.probe.plateau_mbit:.1f} Mbit/s at a {self.window >> 20} MiB window; "
                f"trials: {self.length.why}")  # fmt: skip


def ping_rtt_ms(ends: TransferEnds) -> float | None:
    """The least of PINGS echo round trips from the sender to the receiver, in ms; None when
    ping is missing, fails or no echo came back."""
    if shutil.which("ping") is None:
        return None
    command = in_netns(ends.ends.sender_ns, ["ping", "-n", "-q", "-c", str(PINGS), "-i", "0.2",
                                             "-W", "5", ends.ends.address])  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, timeout=PING_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_ping(done.stdout[:MAX_PING_BYTES].decode(errors="replace"))


def parse_ping(text: str) -> float | None:
    """The least RTT of ping's summary ('rtt min/avg/max/mdev = 300.1/300.2/300.4/0.1 ms')."""
    found = _SUMMARY.search(text)
    if found is None:
        return None
    least = float(found.group(1))
    return least if 0 < least < 60_000 else None


def measure_rtt(engine: TunableEngine, ends: TransferEnds) -> tuple[float, str]:
    """The path's round trip in ms and where it came from (ping, or TCP's least RTT)."""
    pinged = ping_rtt_ms(ends)
    if pinged is not None:
        return pinged, "ping"
    quick = transfer_trial(engine, {}, ends, ends.options(1, 0, files=False))[0]
    return max(quick.min_rtt_ms or quick.rtt_ms, 0.01), "TCP's least RTT"


def size_trials(
    engine: TunableEngine,
    ends: TransferEnds,
    window: int,
    runtime_s: float,
    ramp_s: float,
    rtt: tuple[float, str] | None = None,
) -> tuple[SizedTrials, TransferResult]:
    """Measure the path (the module's docstring) with the sender's tcp_wmem max and the
    receiver's tcp_rmem max at least `window` bytes, and the trials' length from it;
    `rtt` (ms, source) when already measured. The probe's own result comes back too."""
    rtt_ms, source = rtt if rtt is not None else measure_rtt(engine, ends)
    interval = report_interval(rtt_ms)
    bdp = int(ends.rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    seconds = probe_seconds(rtt_ms, bdp, ends.mtu, runtime_s)
    settings: dict[tuple[str, str], object] = {}
    for key, target in ((WMEM, ends.sender), (RMEM, ends.receiver)):
        triple = buffer_triple(engine.tunables, key, target)
        if target is not None and triple is not None and triple[2] < window:
            settings[(key, target)] = (triple[0], triple[1], window)
    options = replace(ends.options(seconds, 0, files=False), interval=interval)
    result = transfer_trial(engine, settings, ends, options)[0]
    probe = read_probe(result.intervals_mbit, rtt_ms, interval,
                       measure_seconds(rtt_ms, runtime_s))  # fmt: skip
    length = trial_length(probe, runtime_s, ramp_s, seconds)
    horizon = growth_horizon_s(rtt_ms, bdp, ends.mtu)
    return SizedTrials(probe, source, length, window, horizon), result
