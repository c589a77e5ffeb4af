"""The settings a probe cannot see but the tunables can read: put on the topology for the rules.

A NIC's ring sizes and coalescing are shown by ethtool, not sysfs; the tunables that own them
read them (tuner/tunables/nic_ring.py ...). `observe_nics` asks every nic-scope tunable that
reports facts (`Tunable.facts`) for them on every interface, through the probe's own reader,
so a live run runs ethtool once per interface and option and `probe --gather` keeps the output
for `--root` to replay. `probe_with_settings` is the probe followed by this step: every command
that probes a topology for the rules calls it.
"""

from __future__ import annotations

import dataclasses

from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.topology.model import NetDevice, Topology
from tuner.tunables.base import TunableError, Value
from tuner.tunables.sysroot import SysRoot
from tuner.tunables.table import IMPLEMENTATIONS


def nic_settings(sys: SysRoot, name: str) -> tuple[tuple[str, int], ...]:
    """Every fact the nic-scope tunables report on interface `name`, as (fact, value) pairs;
    a fact that cannot be read here (the driver shows n/a, no ethtool) is left out."""
    found: dict[str, int] = {}
    for impl in IMPLEMENTATIONS.values():
        if impl.scope != "nic" or not impl.facts:
            continue
        try:
            pairs: tuple[tuple[str, Value], ...] = impl.observe(sys, name)
        except TunableError:
            continue
        # The topology keeps ints only (every NIC fact is a count or a time).
        found.update((fact, value) for fact, value in pairs if isinstance(value, int))
    return tuple(found.items())


def observe_nics(topology: Topology, fs: HostFS) -> Topology:
    """`topology` with every interface's `settings` read through `fs` (the probe's reader)."""
    sys = SysRoot(fs.root, reader=fs)
    nodes = tuple(
        dataclasses.replace(node, settings=nic_settings(sys, node.name))
        if isinstance(node, NetDevice)
        else node
        for node in topology.nodes
    )
    return dataclasses.replace(topology, nodes=nodes)


def probe_with_settings(fs: HostFS) -> Topology:
    """The host below `fs` probed, with the settings only the tunables read."""
    return observe_nics(probe_host(fs), fs)
