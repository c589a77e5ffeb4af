"""The implementation of every key of the registry, and the order a batch is applied in.

The registry (tuner/tunables/registry.py) stays the one list of keys; this table pairs each
with its code and refuses to load if the two ever disagree.
"""

from __future__ import annotations

from tuner.tunables.base import Tunable
from tuner.tunables.block import BLOCK_TUNABLES
from tuner.tunables.cpu import CPU_TUNABLES
from tuner.tunables.irq import IRQ_TUNABLES
from tuner.tunables.nic import NIC_TUNABLES
from tuner.tunables.registry import TUNABLES
from tuner.tunables.sysctl import SYSCTL_TUNABLES

IMPLEMENTATIONS: dict[str, Tunable] = {
    t.key: t
    for t in (*BLOCK_TUNABLES, *SYSCTL_TUNABLES, *NIC_TUNABLES, *IRQ_TUNABLES, *CPU_TUNABLES)
}

if set(IMPLEMENTATIONS) != set(TUNABLES):  # pragma: no cover - a programming error
    raise RuntimeError(
        f"tunables without code: {sorted(set(TUNABLES) - set(IMPLEMENTATIONS))}; "
        f"code without a registry key: {sorted(set(IMPLEMENTATIONS) - set(TUNABLES))}"
    )

APPLY_FIRST = ("block.scheduler",)
"""Keys written before the others of a batch: a new scheduler resets nr_requests, and decides
how deep it may go, so it goes first."""


def apply_rank(key: str) -> int:
    """Sort key for a batch: APPLY_FIRST keys, then the rest in the order given."""
    return 0 if key in APPLY_FIRST else 1
