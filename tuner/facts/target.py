"""A target of a rule: one thing of one kind (a disk, a path, the host) with its facts."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    """`facts` holds exactly the catalogue's names for `kind`; None marks an unknown fact."""

    kind: str
    name: str
    facts: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class FactOptions:
    """What the user told advise that the host cannot: the network path, and whether it is live."""

    link_gbps: float | None = None
    rtt_ms: float | None = None
    live: bool = False
    # Whole devices the workload reads without a file system (tune --target DEVICE): reads
    # enter the stack there, as they do on a mounted device.
    read_devices: frozenset[str] = frozenset()
