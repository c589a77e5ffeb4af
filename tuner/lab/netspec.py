"""A lab spec's `network:` map: a path of some rate, round-trip time, loss and MTU between a
sender and a receiver namespace, each with its own TCP buffers (docs/lab.md, "Network").

Checked by allow-list, bounded, one-line errors naming the field, like the rest of a spec.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probes.hostfs import digits

KEYS = ("rate_mbit", "rtt_ms", "loss_percent", "mtu", "sender", "receiver")
HOST_KEYS = ("tcp_rmem", "tcp_wmem", "tcp_congestion_control", "disk")
RATE_MBIT = (1.0, 10_000.0)
RTT_MS = (0.0, 2_000.0)
LOSS_PERCENT = (0.0, 10.0)
MTU = (576, 9000)
# The delay line holds one direction's bytes in flight: bound rate x RTT (125 MB, e.g.
# 10 Gbit/s x 100 ms) so its queues stay within memory.
MAX_RATE_X_RTT = 1_000_000.0
MAX_BUFFER = (1 << 31) - 1
_CONGESTION = re.compile(r"[a-z][a-z0-9_]{0,15}")  # fullmatch: `$` lets a final newline in


@dataclass(frozen=True)
class HostTcp:
    """One end's TCP settings, applied in its own namespace; None: the namespace's default.

    `tcp_rmem` and `tcp_wmem` are (min, default, max) in bytes, as the sysctls take them.
    `disk` names the spec's lab disk (with a file system) at this end: the sender reads its
    files from it, the receiver writes to it (checked against the disks in tuner/lab/spec.py).
    """

    tcp_rmem: tuple[int, int, int] | None = None
    tcp_wmem: tuple[int, int, int] | None = None
    tcp_congestion_control: str | None = None
    disk: str | None = None


@dataclass(frozen=True)
class NetworkSpec:
    """The path: `rate_mbit` of Ethernet frames each way, `rtt_ms` round trip, `loss_percent`
    of the sender's frames dropped, `mtu` on every link, and each end's TCP settings."""

    rate_mbit: float
    rtt_ms: float
    loss_percent: float = 0.0
    mtu: int = 1500
    sender: HostTcp = HostTcp()
    receiver: HostTcp = HostTcp()

    @property
    def bdp_bytes(self) -> int:
        """The bandwidth-delay product: bytes in flight that keep the path full."""
        return int(self.rate_mbit * 1e6 / 8 * self.rtt_ms / 1e3)


def parse_network(raw: object, fail: Callable[[str, str], Exception]) -> NetworkSpec:
    """Check a spec's `network:` mapping; `fail(where, why)` builds the one-line error."""
    entry = _mapping(raw, "network", KEYS, fail)
    rate = _number(entry, "rate_mbit", RATE_MBIT, fail, required=True)
    rtt = _number(entry, "rtt_ms", RTT_MS, fail, required=True)
    loss = _number(entry, "loss_percent", LOSS_PERCENT, fail, required=False)
    mtu = entry.get("mtu", 1500)
    if isinstance(mtu, bool) or not isinstance(mtu, int) or not MTU[0] <= mtu <= MTU[1]:
        raise fail("network", f"mtu must be an integer from {MTU[0]} to {MTU[1]}, got {mtu!r}")
    if rate * rtt > MAX_RATE_X_RTT:
        raise fail(
            "network",
            f"rate_mbit x rtt_ms is {rate * rtt:g}, above {MAX_RATE_X_RTT:g} "
            "(a 125 MB bandwidth-delay product, the most the delay line holds)",
        )
    return NetworkSpec(
        rate, rtt, loss, mtu, _host(entry, "sender", fail), _host(entry, "receiver", fail)
    )


def _host(entry: dict[str, Any], role: str, fail: Callable[[str, str], Exception]) -> HostTcp:
    where = f"network.{role}"
    host = _mapping(entry.get(role, {}), where, HOST_KEYS, fail)
    congestion = host.get("tcp_congestion_control")
    if congestion is not None and (
        not isinstance(congestion, str) or not _CONGESTION.fullmatch(congestion)
    ):
        raise fail(where, f"tcp_congestion_control must match {_CONGESTION.pattern}, "
                          f"got {congestion!r}")  # fmt: skip
    disk = host.get("disk")
    if disk is not None and not isinstance(disk, str):
        raise fail(where, f"disk must name one of the spec's disks, got {disk!r}")
    return HostTcp(
        _triple(host, "tcp_rmem", where, fail),
        _triple(host, "tcp_wmem", where, fail),
        congestion,
        disk,
    )


def _triple(
    host: dict[str, Any], key: str, where: str, fail: Callable[[str, str], Exception]
) -> tuple[int, int, int] | None:
    """'4096 131072 6291456' or [4096, 131072, 6291456]: min <= default <= max, in bytes."""
    value = host.get(key)
    if value is None:
        return None
    parts = value.split() if isinstance(value, str) else value
    why = f"{key} must be three byte counts min <= default <= max, like '4096 131072 6291456'"
    if not isinstance(parts, list) or len(parts) != 3:
        raise fail(where, f"{why}; got {value!r}")
    numbers = []
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, (int, str)):
            raise fail(where, f"{why}; got {value!r}")
        if isinstance(part, str) and not digits(part):
            raise fail(where, f"{why}; got {value!r}")
        numbers.append(int(part))
    low, default, high = numbers
    if not 1 <= low <= default <= high <= MAX_BUFFER:
        raise fail(where, f"{why} (at most {MAX_BUFFER}); got {value!r}")
    return low, default, high


def _mapping(
    value: object, where: str, allowed: tuple[str, ...], fail: Callable[[str, str], Exception]
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, f"expected a mapping, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise fail(where, f"unknown key {key!r} (known: {', '.join(allowed)})")
    return value


def _number(
    entry: dict[str, Any],
    key: str,
    bounds: tuple[float, float],
    fail: Callable[[str, str], Exception],
    required: bool,
) -> float:
    value = entry.get(key)
    if value is None and not required:
        return 0.0
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise fail("network", f"{key} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)
