"""Paper 003's third observation on the lab: with loss, congestion control decides how much of
the path a transfer keeps. On `wan-lossy` (200 Mbit/s, 100 ms, 0.1 % of the sender's frames
dropped) reno, loss-based, halves its window on every loss and grows it back by one segment
per round trip (about 86 s to regain half the 2.5 MB bandwidth-delay product at 100 ms), so a
loss every thousand frames holds it to a few Mbit/s; bbr paces at the rate it measures, does
not cut it on loss, and keeps the path full.

One lab, one iperf3 run per algorithm (iperf3 -C, as root: reno and bbr may also be set per
namespace here). Figures from several runs and the tolerances' margins are in docs/lab.md
("Loss and congestion control"); `pytest -s` prints this run's.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests.lab.test_network import goodput_mbit
from tuner.lab import lab_down, lab_up, load_spec
from tuner.trials.transfer import Ends, TransferOptions, run_transfer

pytestmark = pytest.mark.lab


def mathis_mbit(mss: int, rtt_ms: float, loss: float) -> float:
    """Mathis et al.'s ceiling for a loss-based TCP: MSS / RTT x 1.22 / sqrt(p)."""
    return mss * 8 / (rtt_ms / 1e3) * 1.22 / loss**0.5 / 1e6


def test_bbr_keeps_the_lossy_path_full_where_reno_does_not_recover(state: Path) -> None:
    lab = lab_up(load_spec("wan-lossy"))
    net = lab.network
    assert net is not None and net.loss_percent > 0
    ends, path = Ends.of_lab(net), goodput_mbit(net)
    # 6 s after 2 s of slow start: past reno's first losses, and short of bbr's PROBE_RTT (10 s).
    reno = run_transfer(ends, TransferOptions(seconds=6, omit=2, congestion="reno"))
    bbr = run_transfer(ends, TransferOptions(seconds=6, omit=2, congestion="bbr"))
    lab_down()
    ceiling = mathis_mbit(net.mtu - 52, net.rtt_ms, net.loss_percent / 100)
    print(f"\nwan-lossy: reno {reno.received_mbit:.1f} Mbit/s ({reno.received_mbit / path:.3f} "
          f"of the path, {reno.received_mbit / ceiling:.2f} of Mathis' {ceiling:.1f}; "
          f"{reno.retransmits} retransmits, per second {reno.intervals_mbit}); bbr "
          f"{bbr.received_mbit:.1f} ({bbr.received_mbit / path:.3f}; {bbr.retransmits} "
          f"retransmits, per second {bbr.intervals_mbit})")  # fmt: skip
    assert (reno.congestion, bbr.congestion) == ("reno", "bbr")
    # Both lost frames on the same path: the difference is what each does about it.
    assert reno.retransmits > 0 and bbr.retransmits > 0
    # Measured 0.996-1.005 of the path (docs/lab.md): a busy VM costs bbr seconds, not halves.
    assert bbr.received_mbit >= 0.7 * path
    assert statistics.median(bbr.intervals_mbit) >= 0.7 * path
    # Measured 0.019-0.055 of the path, 0.8-2.4 of Mathis' ceiling: reno never climbs back.
    assert reno.received_mbit <= 0.25 * path
    assert max(reno.intervals_mbit) <= 0.5 * path
    assert bbr.received_mbit >= 4 * reno.received_mbit
