"""A short path with an old kernel's TCP buffers: the transfer tune's end-to-end tests' lab.

The built-in `wan-old-buffers` (200 Mbit/s, 100 ms) shows the window cap a user of a long path
meets, but every transfer trial there is sized by its round trip (issue 28): a 7 s probe, then
1-2 s of ramp and 3 s (30 round trips) measured per trial, over two minutes a tune. The same
physics holds at 20 ms: the bandwidth-delay product (500 kB at 200 Mbit/s) is still about five
times what Linux 2.6's buffers let the receiver advertise (window / RTT: 38.7 Mbit/s, 0.2 of
the path, where `wan-old-buffers` carries 7.6), so the window is the cap and raising it lifts
the transfer to the path's rate. But 30 round trips are 0.6 s, under `--runtime 1`'s floor,
and slow start fills the path in 6 round trips (0.12 s): the probe takes 2 s, a trial 2 s, and
a 3-trial tune 35-50 s on the shared 2-core VM (2026-11-28, load average 8-13).
"""

from __future__ import annotations

from pathlib import Path

RATE_MBIT = 200.0
RTT_MS = 20.0
OLD_RMEM = "4096 87380 174760"
OLD_WMEM = "4096 16384 131072"
SPEC = f"""\
name: short-old-buffers
description: A 200 Mbit/s, 20 ms path with Linux 2.6's small TCP buffers at both ends.
network:
  rate_mbit: {RATE_MBIT:g}
  rtt_ms: {RTT_MS:g}
  mtu: 1500
  sender: {{tcp_rmem: {OLD_RMEM}, tcp_wmem: {OLD_WMEM}}}
  receiver: {{tcp_rmem: {OLD_RMEM}, tcp_wmem: {OLD_WMEM}}}
"""
PATH_ADDS_MS = 2.0
"""The most the lab's path adds to the delay line's round trip (0.3-1.5 ms measured,
docs/lab.md's "Network")."""


def bdp_bytes() -> int:
    """The path's bandwidth-delay product at the spec's RTT, in bytes."""
    return int(RATE_MBIT * 1e6 / 8 * RTT_MS / 1e3)


def short_path_spec(folder: Path) -> Path:
    """The spec written to `folder`/short-old-buffers.yaml, for `iotuner lab up FILE`."""
    path = folder / "short-old-buffers.yaml"
    path.write_text(SPEC)
    return path
