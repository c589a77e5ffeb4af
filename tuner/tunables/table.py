"""Every tunable iotuner knows, one module per family, and the order a batch is applied in.

A new setting is a Tunable subclass in its own module (its key, scope, persistence, value
domain, search dimension, verify reads and current-value fact), listed here.
tuner/tunables/registry.py derives the specs the rules and plans check keys against.
"""

from __future__ import annotations

from tuner.tunables.base import Tunable
from tuner.tunables.bfq import BFQ_TUNABLES
from tuner.tunables.block import BLOCK_TUNABLES
from tuner.tunables.cpu import CPU_TUNABLES
from tuner.tunables.irq import IRQ_TUNABLES
from tuner.tunables.mq_deadline import MQ_DEADLINE_TUNABLES
from tuner.tunables.nic import NIC_TUNABLES
from tuner.tunables.nic_coalesce import NIC_COALESCE_TUNABLES
from tuner.tunables.nic_ring import NIC_RING_TUNABLES
from tuner.tunables.nic_txqueuelen import NIC_TXQUEUELEN_TUNABLES
from tuner.tunables.qdisc import QDISC_TUNABLES
from tuner.tunables.sysctl import SYSCTL_TUNABLES
from tuner.tunables.wbt import WBT_TUNABLES

_ALL: tuple[Tunable, ...] = (
    *BLOCK_TUNABLES,
    # After the block queue keys, so the lab rows' spaces (and the seeded draws over them)
    # stay as they were where these have no dimension.
    *WBT_TUNABLES,
    *BFQ_TUNABLES,
    *MQ_DEADLINE_TUNABLES,
    *SYSCTL_TUNABLES,
    *QDISC_TUNABLES,
    *NIC_TUNABLES,
    *NIC_RING_TUNABLES,
    *NIC_COALESCE_TUNABLES,
    *NIC_TXQUEUELEN_TUNABLES,
    *IRQ_TUNABLES,
    *CPU_TUNABLES,
)
IMPLEMENTATIONS: dict[str, Tunable] = {t.key: t for t in _ALL}
if len(IMPLEMENTATIONS) != len(_ALL):  # pragma: no cover - a programming error
    raise RuntimeError("two tunables declare the same key")

APPLY_ORDER = ("block.scheduler", "block.max_sectors_kb")
"""Keys written before the others of a batch, in this order. A new scheduler resets nr_requests
and decides how deep it may go, and creates its own parameters' files (bfq's slice_idle,
mq-deadline's fifo_batch: written after it, as every key not listed here is). max_sectors_kb
is a limit other values follow: on a rotational device (kernel 6.17+) writing it raises
read_ahead_kb to twice its value."""

APPLY_LAST = ("block.read_ahead_kb",)
"""Keys written after everything else: nothing written later in the batch can move them."""


def apply_rank(key: str) -> int:
    """Sort key for a batch: APPLY_ORDER keys in that order, the rest as given, APPLY_LAST last.

    The engine, the udev rules (which udev runs in order), the role's live writes and the
    daemon's re-applies all follow it, so a value read back after the batch is the value set.
    """
    if key in APPLY_ORDER:
        return APPLY_ORDER.index(key)
    return len(APPLY_ORDER) + (1 if key in APPLY_LAST else 0)
