"""Facts: what the rules test, computed from a Topology (see catalog.py for every name).

`collect(topology, options)` returns, for every target kind of the catalogue, its targets, each
with exactly the catalogue's facts for its kind (None where unknown). The topology is indexed
once (index.py); each kind's facts are small functions in the module named for what they hold.
"""

from __future__ import annotations

from tuner.facts.catalog import FACTS
from tuner.facts.host import host_target
from tuner.facts.index import TopologyIndex
from tuner.facts.irqs import irq_device_targets
from tuner.facts.network import nic_targets
from tuner.facts.paths import path_targets
from tuner.facts.pci import pci_function_targets
from tuner.facts.storage import storage_targets
from tuner.facts.target import FactOptions, Target
from tuner.topology.model import Topology

__all__ = ["FACTS", "FactOptions", "Target", "collect"]


def collect(topology: Topology, options: FactOptions | None = None) -> dict[str, list[Target]]:
    """Every target of every kind in the catalogue, with its facts."""
    options = options or FactOptions()
    ix = TopologyIndex(topology)
    found: dict[str, list[Target]] = {
        "host": [host_target(ix, options)],
        **storage_targets(ix, options.live, read_devices=options.read_devices),
        "pci_function": pci_function_targets(ix),
        "path": path_targets(ix),
        "irq_device": irq_device_targets(ix),
        "nic": nic_targets(ix),
    }
    return {kind: found.get(kind, []) for kind in FACTS}
