"""The `iotuner probe --json` document: the whole model, plus flat lists other tools read."""

from __future__ import annotations

import dataclasses
from typing import Any

from tuner.codec import DecodeError, decode, encode
from tuner.topology.model import (
    NODE_TYPES,
    SCHEMA_VERSION,
    BlockDevice,
    DaxDevice,
    NetDevice,
    Node,
    NumaNode,
    PciFunction,
    Topology,
)

_NODE_CLASSES = {cls.__name__: cls for cls in NODE_TYPES}


def to_document(topology: Topology) -> dict[str, Any]:
    """The JSON document for a topology: flat lists first, then the tree they come from."""
    return {
        "schema_version": topology.schema_version,
        "root": topology.root,
        "numa_nodes": [_numa_row(topology, n) for n in topology.of_type(NumaNode)],
        "pci_devices": [_pci_row(topology, f) for f in topology.of_type(PciFunction)],
        "block_devices": [_block_row(topology, b) for b in topology.of_type(BlockDevice)],
        "net_devices": [_net_row(topology, n) for n in topology.of_type(NetDevice)],
        "dax_devices": [
            {
                "name": dax.name,
                "size_bytes": dax.size_bytes,
                "driver": dax.driver,
                "target_node": dax.target_node,
                "numa_node": topology.numa_node_of(dax.id),
            }
            for dax in topology.of_type(DaxDevice)
        ],
        "irqs": [
            {
                "irq": irq.irq,
                "name": irq.name,
                "chip": irq.chip,
                "device": irq.device,
                "cpus": list(irq.cpus),
                "affinity": list(irq.affinity),
                "effective_affinity": list(irq.effective_affinity),
                "counts": list(irq.counts),
            }
            for irq in topology.irqs
        ],
        "warnings": list(topology.warnings),
        "cpu": encode(topology.cpu),
        "tcp": encode(topology.tcp),
        "vm": encode(topology.vm),
        "mounts": encode(topology.mounts),
        "filesystems": encode(topology.filesystems),
        "edges": encode(topology.edges),
        "nodes": [{"type": type(node).__name__, **encode(node)} for node in topology.nodes],
    }


def from_document(doc: dict[str, Any]) -> Topology:
    """Rebuild the topology from `to_document`'s output (the flat lists are derived, not read)."""
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise DecodeError(f"schema_version {version!r} is not {SCHEMA_VERSION}")
    nodes: list[Node] = []
    for i, raw in enumerate(doc.get("nodes", [])):
        cls = _NODE_CLASSES.get(raw.get("type", ""))
        if cls is None:
            raise DecodeError(f"nodes[{i}]: unknown node type {raw.get('type')!r}")
        nodes.append(decode(cls, {k: v for k, v in raw.items() if k != "type"}, f"nodes[{i}]"))
    # Flat rows carry derived keys (an irq's `cpus`); decoding keeps only the model's fields.
    model_keys = ("root", "edges", "mounts", "filesystems", "irqs", "cpu", "tcp", "vm", "warnings")
    fields = {key: doc[key] for key in model_keys if key in doc}
    topology = decode(Topology, {**fields, "schema_version": version}, "document")
    return dataclasses.replace(topology, nodes=tuple(nodes))


def _numa_row(topology: Topology, node: NumaNode) -> dict[str, Any]:
    mine = set(node.cpus)
    places = [p for p in topology.cpu.places if p.cpu in mine]
    known = bool(places) and len(places) == len(node.cpus)
    return {
        "id": node.os_index,
        "cpus": list(node.cpus),
        "sockets": sorted({p.socket for p in places if p.socket is not None}) if known else None,
        "cores": len({p.core for p in places}) if known else None,
        "memory_bytes": node.memory_bytes,
        "distances": list(node.distances),
    }


def _pci_row(topology: Topology, fn: PciFunction) -> dict[str, Any]:
    parent = topology.node(fn.parent) if fn.parent else None
    link = fn.link
    return {
        "address": fn.address,
        "class": None if fn.class_code is None else f"0x{fn.class_code:06x}",
        "vendor": None if fn.vendor_id is None else f"0x{fn.vendor_id:04x}",
        "device": None if fn.device_id is None else f"0x{fn.device_id:04x}",
        "vendor_name": fn.vendor_name,
        "device_name": fn.device_name,
        "driver": fn.driver,
        "numa_node": topology.numa_node_of(fn.id),
        "local_cpus": list(fn.local_cpus),
        "parent": parent.address if isinstance(parent, PciFunction) else None,
        "slot": fn.slot,
        "onboard_index": fn.onboard_index,
        "label": fn.label,
        "virtual_function": fn.virtual_function,
        "link": None
        if link is None
        else {
            "speed_gts": link.speed_gts,
            "width": link.width,
            "max_speed_gts": link.max_speed_gts,
            "max_width": link.max_width,
            "usable_mbps": link.usable_mbps,
            "max_usable_mbps": link.max_usable_mbps,
        },
    }


def _block_row(topology: Topology, dev: BlockDevice) -> dict[str, Any]:
    fn = topology.pci_function_of(dev.id)
    mount = topology.mount_of(dev.name)
    return {
        "name": dev.name,
        "kind": dev.kind,
        "pci_address": fn.address if fn else None,
        "rotational": dev.rotational,
        "size_bytes": dev.size_bytes,
        "model": dev.model,
        "serial": dev.serial,
        "wwn": dev.wwn,
        "queue": encode(dev.queue) if dev.queue else None,
        "partition": encode(dev.partition) if dev.partition else None,
        "md": encode(dev.md) if dev.md else None,
        "loop": encode(dev.loop) if dev.loop else None,
        "parents": topology.lower_devices(dev.name),
        "mountpoint": mount.mountpoint if mount else None,
        "fstype": mount.fstype if mount else dev.fs_type,
        "numa_node": topology.numa_node_of(dev.id),
    }


def _net_row(topology: Topology, nic: NetDevice) -> dict[str, Any]:
    fn = topology.pci_function_of(nic.id)
    return {
        "name": nic.name,
        "pci_address": fn.address if fn else None,
        "driver": nic.driver,
        "mtu": nic.mtu,
        "speed_mbps": nic.speed_mbps,
        "rx_queues": nic.rx_queues,
        "tx_queues": nic.tx_queues,
        "virtual": nic.virtual,
        "numa_node": topology.numa_node_of(nic.id),
        "settings": dict(nic.settings),
    }
