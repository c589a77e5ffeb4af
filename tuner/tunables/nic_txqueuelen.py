"""nic.txqueuelen: the length of an interface's transmit queue in packets
(/sys/class/net/IFACE/tx_queue_len, `ip link set IFACE txqueuelen N`).

The qdisc in front of the driver holds this many packets before it drops; ESnet's host tuning
raises it from 1000 on 10 Gb/s and faster links with long round trips.
"""

from __future__ import annotations

from typing import ClassVar

from tuner.tunables.base import UINT_MAX, Pending, Tunable, Value
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.nic import InterfaceAttribute
from tuner.tunables.sysroot import SysRoot

SEARCH_LOW = 100
SEARCH_HIGH = 100_000
"""A tune's log-scaled range: a tenth of the kernel's default 1000 to a hundred times it (10
Gb/s for 120 ms in 1500-byte frames is about 100,000 packets). A current value outside it is
kept inside."""


class TxQueueLen(InterfaceAttribute):
    """The transmit queue length of one network interface, in packets."""

    key = "nic.txqueuelen"
    doc = "transmit queue length in packets (/sys/class/net/IFACE/tx_queue_len)"
    attr = "tx_queue_len"
    current_fact = "txqueuelen"
    facts: ClassVar[dict[str, str]] = {
        "txqueuelen": "transmit queue length, packets (tx_queue_len)"
    }

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """0 to UINT_MAX: net/core/dev.c dev_change_tx_queue_len refuses more with ERANGE."""
        self.rel(sys, target)
        return self.in_range(target, value, 0, UINT_MAX)

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """SEARCH_LOW to SEARCH_HIGH, log scale, the current value inside; None for a queue of
        0 (a queueless device such as loopback or a tunnel: nothing to size)."""
        current = self.read(sys, target)
        if not isinstance(current, int) or current <= 0:
            return None
        low, high = min(SEARCH_LOW, current), max(SEARCH_HIGH, current)
        return Dimension(self.key, target, "int", low=low, high=high, log=True)


NIC_TXQUEUELEN_TUNABLES: tuple[Tunable, ...] = (TxQueueLen(),)
