"""nic.ring_rx, nic.ring_tx: a NIC's receive and transmit ring sizes (`ethtool -g` / `-G`).

A ring holds the descriptors of frames the NIC has received but the host has not yet taken
(or queued but not yet sent). Too small a receive ring drops frames in the host itself when
the CPU is late to the interrupt. The driver reports its "Pre-set maximums"; a value above
them, or any value where it shows n/a, is refused before anything runs.
"""

from __future__ import annotations

from typing import ClassVar

from probes.ethtool import Rings, parse_rings
from tuner.tunables.base import Pending, Value
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.ethtool import EthtoolSetting
from tuner.tunables.sysroot import SysRoot

SEARCH_LOW = 64
"""The smallest ring a tune tries: below it a 10 Gb/s burst of 1500-byte frames overflows in
under 80 µs, shorter than a scheduler tick. A current value lower still is kept inside."""


class RingSize(EthtoolSetting):
    """One ring (RX or TX) of one interface, in descriptors."""

    read_option = "-g"
    write_option = "-G"
    section = "Current hardware settings:"

    def rings(self, sys: SysRoot, target: str) -> Rings:
        """Both rings as the driver reports them; TunableError when ethtool has none."""
        return self.parsed(sys, target, parse_rings)

    def read(self, sys: SysRoot, target: str) -> Value:
        """The ring's current size; TunableError when the driver shows n/a."""
        current = self.rings(sys, target).current.get(self.shown_field)
        if current is None:
            raise self.fail(target, f"the driver reports no {self.shown_field} ring size (n/a)")
        return current

    def maximum(self, sys: SysRoot, target: str) -> int:
        """The driver's pre-set maximum; TunableError when it shows n/a (cannot be set)."""
        high = self.rings(sys, target).maximum.get(self.shown_field)
        if not high:
            raise self.fail(
                target, f"the driver does not let the {self.shown_field} ring be set (maximum n/a)"
            )
        return high

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """1 to the driver's pre-set maximum."""
        number = self.as_int(target, value)
        high = self.maximum(sys, target)
        if number < 1:
            raise self.invalid(target, f"{number} is not a ring size (1 or more)")
        if number > high:
            raise self.invalid(target, f"{number} exceeds {high}, the driver's pre-set maximum")
        return number

    def observe(self, sys: SysRoot, target: str) -> tuple[tuple[str, Value], ...]:
        """The current size and the pre-set maximum (when the driver reports one)."""
        rings = self.rings(sys, target)
        found: list[tuple[str, Value]] = []
        current, high = rings.current.get(self.shown_field), rings.maximum.get(self.shown_field)
        if current is not None:
            found.append((f"ring_{self.field}", current))
        if high is not None:
            found.append((f"ring_{self.field}_max", high))
        return tuple(found)

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """Powers of two from SEARCH_LOW (or the current size when lower) to the maximum."""
        rings = self.rings(sys, target)
        current, high = rings.current.get(self.shown_field), rings.maximum.get(self.shown_field)
        if not current or not high:
            return None
        low = 1 << (min(SEARCH_LOW, current).bit_length() - 1)
        if high <= low:
            return None  # a ring that cannot be smaller than SEARCH_LOW: nothing to search
        return Dimension(self.key, target, "int", low=low, high=high, pow2=True)


class RingRx(RingSize):
    """The receive ring."""

    key = "nic.ring_rx"
    doc = "receive ring size in descriptors (ethtool -G IFACE rx N)"
    field = "rx"
    shown_field = "RX"
    current_fact = "ring_rx"
    facts: ClassVar[dict[str, str]] = {
        "ring_rx": "receive ring size, descriptors (ethtool -g)",
        "ring_rx_max": "the driver's pre-set maximum receive ring",
    }


class RingTx(RingSize):
    """The transmit ring."""

    key = "nic.ring_tx"
    doc = "transmit ring size in descriptors (ethtool -G IFACE tx N)"
    field = "tx"
    shown_field = "TX"
    current_fact = "ring_tx"
    facts: ClassVar[dict[str, str]] = {
        "ring_tx": "transmit ring size, descriptors (ethtool -g)",
        "ring_tx_max": "the driver's pre-set maximum transmit ring",
    }


NIC_RING_TUNABLES = (RingRx(), RingTx())
