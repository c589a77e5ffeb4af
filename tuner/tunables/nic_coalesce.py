"""nic.coalesce_rx_usecs, nic.coalesce_tx_usecs: how long a NIC waits after a frame before it
raises an interrupt (`ethtool -c` / `-C`), in microseconds.

Longer waits batch more frames per interrupt (less CPU per byte), shorter ones cut latency.
Where the driver shows n/a it does not support the parameter, and the value is refused with
that reason before anything runs.
"""

from __future__ import annotations

from typing import ClassVar

from probes.ethtool import parse_coalesce
from tuner.tunables.base import UINT_MAX, Pending, Value
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.ethtool import EthtoolSetting
from tuner.tunables.sysroot import SysRoot

SEARCH_HIGH = 250
"""The longest wait a tune tries, in µs. At 10 Gb/s, 1500-byte frames (1538 bytes on the wire)
arrive 812,744 a second: 250 µs gathers about 203 of them, still below the 256 descriptors of
a default receive ring, so no wait in the range can overflow it by itself. A current value
above it is kept inside."""


class CoalesceUsecs(EthtoolSetting):
    """One coalescing delay of one interface."""

    read_option = "-c"
    write_option = "-C"

    def params(self, sys: SysRoot, target: str) -> dict[str, int | None]:
        """Every numeric parameter `ethtool -c` shows; TunableError when it shows none."""
        return self.parsed(sys, target, parse_coalesce)

    def read(self, sys: SysRoot, target: str) -> Value:
        """The delay in µs; TunableError when the driver shows n/a (does not support it)."""
        return self.usecs(sys, target)

    def usecs(self, sys: SysRoot, target: str) -> int:
        """The delay in µs, as `read` gives it."""
        value = self.params(sys, target).get(self.shown_field)
        if value is None:
            raise self.fail(target, f"the driver does not support {self.shown_field} (n/a)")
        return value

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """0 to UINT_MAX where the driver supports the parameter; the driver bounds it further
        (ixgbe at 1022 µs) and says so when `ethtool -C` runs."""
        number = self.in_range(target, value, 0, UINT_MAX)
        self.read(sys, target)
        return number

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """0 to SEARCH_HIGH µs (or the current value when higher), linear: 0 is a real choice
        (an interrupt per frame), so a log scale cannot hold it."""
        current = self.usecs(sys, target)
        return Dimension(self.key, target, "int", low=0, high=max(SEARCH_HIGH, current))


class CoalesceRxUsecs(CoalesceUsecs):
    """The receive delay."""

    key = "nic.coalesce_rx_usecs"
    doc = "receive interrupt delay in µs (ethtool -C IFACE rx-usecs N)"
    field = shown_field = "rx-usecs"
    current_fact = "coalesce_rx_usecs"
    facts: ClassVar[dict[str, str]] = {
        "coalesce_rx_usecs": "receive interrupt coalescing delay, µs (ethtool -c)"
    }


class CoalesceTxUsecs(CoalesceUsecs):
    """The transmit delay."""

    key = "nic.coalesce_tx_usecs"
    doc = "transmit interrupt delay in µs (ethtool -C IFACE tx-usecs N)"
    field = shown_field = "tx-usecs"
    current_fact = "coalesce_tx_usecs"
    facts: ClassVar[dict[str, str]] = {
        "coalesce_tx_usecs": "transmit interrupt coalescing delay, µs (ethtool -c)"
    }


NIC_COALESCE_TUNABLES = (CoalesceRxUsecs(), CoalesceTxUsecs())
