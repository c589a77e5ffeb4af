"""A hardware fingerprint: hosts with the same one can share a tuned plan.

The fingerprint is what decides the best I/O settings and does not change from one copy of a
server to the next: the storage and network controllers (PCI ids, driver, NUMA node, the PCIe
link they trained and the links above them), the disks below each controller by class, size,
rotation and model with the SAS/SATA hops on their way, the NICs by driver and speed, the CPU
model and the NUMA layout (node count, CPUs per node). Serial numbers, WWNs, kernel names, PCI
addresses, device names from pci.ids and memory size are left out: they differ between
identical machines (bus numbers and MemTotal move with firmware and BIOS settings, names with
the pci.ids version) without changing what the tune measured. Settings (queue, sysctls, the
governor) are left out too: they are what the plan changes.

The document is canonical (lists sorted, keys sorted, compact JSON), hashed with sha256, and
the first 12 hex digits name the group. `devices` restricts the storage part to the named
block devices, what they stand on (an array's member disks, a partition's disk) and the
controllers above them, for fleets whose plans touch only data disks (and for the fleet test,
whose fake hosts share one machine but own their lab devices).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuner.errors import BadInput
from tuner.topology.document import from_document
from tuner.topology.model import (
    BlockDevice,
    NetDevice,
    NumaNode,
    PciFunction,
    PciLink,
    StoragePort,
    Topology,
)
from tuner.units import human_bytes

FINGERPRINT_VERSION = 1
DIGEST_LENGTH = 12
# Whole disks that are memory or network, not hardware behind a controller.
_NOT_HARDWARE = ("zram", "ram", "nbd", "sr", "fd")

Json = dict[str, Any]


@dataclass(frozen=True)
class Fingerprint:
    """The hash naming a hardware group, what was hashed, and a line for people."""

    digest: str
    summary: str
    document: Json


def fingerprint(topology: Topology, devices: Sequence[str] | None = None) -> Fingerprint:
    """The fingerprint of a probed host; `devices` limits storage to these block devices."""
    doc = hardware_document(topology, devices)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_LENGTH]
    return Fingerprint(digest, summarize(doc), doc)


def fingerprint_of_document(probe_doc: Json, devices: Sequence[str] | None = None) -> Fingerprint:
    """The fingerprint of an `iotuner probe --json` document (BadInput if it is not one)."""
    try:
        topology = from_document(probe_doc)
    except (ValueError, TypeError, AttributeError) as err:
        raise BadInput(f"not an iotuner probe document: {err}") from None
    return fingerprint(topology, devices)


def hardware_document(topology: Topology, devices: Sequence[str] | None = None) -> Json:
    """The canonical hardware description that is hashed (JSON-ready, lists sorted)."""
    disks = _selected_disks(topology, devices)
    by_controller: dict[str | None, list[Json]] = {}
    for disk in disks:
        fn = topology.pci_function_of(disk.id)
        by_controller.setdefault(fn.id if fn else None, []).append(_disk_row(topology, disk))
    nics: dict[str | None, list[Json]] = {}
    for nic in topology.of_type(NetDevice):
        if not nic.virtual:
            fn = topology.pci_function_of(nic.id)
            nics.setdefault(fn.id if fn else None, []).append(_nic_row(nic))
    controllers = []
    for fn in topology.of_type(PciFunction):
        storage = fn.is_storage_controller and (devices is None or fn.id in by_controller)
        if storage or fn.is_network_controller:
            controllers.append(
                _controller_row(topology, fn, by_controller.get(fn.id, []), nics.get(fn.id, []))
            )
    numa = sorted(topology.of_type(NumaNode), key=lambda n: n.os_index)
    return {
        "fingerprint_version": FINGERPRINT_VERSION,
        "cpu_model": topology.cpu.model_name,
        "numa": {"nodes": len(numa), "cpus_per_node": [len(n.cpus) for n in numa]},
        "controllers": _sorted(controllers),
        "disks": _sorted(by_controller.get(None, [])),
        "nics": _sorted(nics.get(None, [])),
    }


def _selected_disks(topology: Topology, devices: Sequence[str] | None) -> list[BlockDevice]:
    if devices is None:
        return [
            d
            for d in topology.of_type(BlockDevice)
            if d.kind in ("disk", "nvme")
            and not d.removable
            and d.size_bytes
            and not d.name.startswith(_NOT_HARDWARE)
        ]
    chosen: dict[str, BlockDevice] = {}
    for name in devices:
        found = topology.block_device(name.removeprefix("/dev/"))
        if found is None:
            raise BadInput(f"{name}: no such block device on {topology.root}")
        chosen[found.name] = found
    # What a named device stands on is hardware it uses: an md array's member disks, a
    # partition's disk, the device under a loop device's file. Partitions on the way are
    # layout, not hardware, and are passed through.
    todo = list(chosen)
    while todo:
        for lower in topology.lower_devices(todo.pop()):
            dev = topology.block_device(lower)
            if dev is None or dev.name in chosen:
                continue
            todo.append(dev.name)
            if dev.kind != "partition":
                chosen[dev.name] = dev
    return list(chosen.values())


def disk_class(disk: BlockDevice) -> str:
    """nvme, ssd or hdd for a whole disk (disk when rotation is unknown); else its kind."""
    if disk.kind == "nvme":
        return "nvme"
    if disk.kind != "disk":
        return disk.kind
    if disk.rotational is None:
        return "disk"
    return "hdd" if disk.rotational else "ssd"


def disk_row(topology: Topology, disk: BlockDevice) -> Json:
    """What the fingerprint says of one disk: class, size, rotation, model, the storage hops
    between it and its controller (and an array's geometry). Two disks with equal rows are
    interchangeable for a plan: the daemon gives a disk that appears the plan of its class."""
    return _disk_row(topology, disk)


def _disk_row(topology: Topology, disk: BlockDevice) -> Json:
    # The hops between the disk and its controller, top down: a 4-lane 12 Gb/s wide port to an
    # expander differs from direct 6 Gb/s SATA links even with the same disks and HBA.
    hops = [
        [hop.kind, hop.link_gbps, hop.lanes]
        for hop in reversed(list(topology.ancestors(disk.id)))
        if isinstance(hop, StoragePort)
    ]
    md = disk.md
    return {
        "class": disk_class(disk),
        "size_bytes": disk.size_bytes,
        "rotational": disk.rotational,
        "model": disk.model,
        "path": hops,
        # An array named in `devices` is tuned for its geometry, not only for its size.
        "md": None if md is None else [md.level, md.chunk_bytes, md.raid_disks],
    }


def _nic_row(nic: NetDevice) -> Json:
    speed = nic.speed_mbps if nic.speed_mbps is not None and nic.speed_mbps > 0 else None
    return {"driver": nic.driver, "speed_mbps": speed}


def _link(link: PciLink | None) -> list[float | int | None] | None:
    if link is None:
        return None
    return [link.speed_gts, link.width, link.max_speed_gts, link.max_width]


def _hex(value: int | None, width: int) -> str | None:
    return None if value is None else f"{value:0{width}x}"


def _controller_row(
    topology: Topology, fn: PciFunction, disks: list[Json], nics: list[Json]
) -> Json:
    upstream = [
        _link(above.link)
        for above in reversed(list(topology.ancestors(fn.id)))
        if isinstance(above, PciFunction)
    ]
    return {
        "class": _hex(fn.class_code, 6),
        "ids": f"{_hex(fn.vendor_id, 4)}:{_hex(fn.device_id, 4)}",
        "subsystem": f"{_hex(fn.subsystem_vendor_id, 4)}:{_hex(fn.subsystem_device_id, 4)}",
        "driver": fn.driver,
        "numa_node": topology.numa_node_of(fn.id),
        "link": _link(fn.link),
        "upstream": upstream,
        "disks": _sorted(disks),
        "nics": _sorted(nics),
    }


def _sorted(rows: list[Json]) -> list[Json]:
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


# --- the summary line -----------------------------------------------------------------------


def summarize(doc: Json) -> str:
    """One line for people: NUMA layout, then each controller with what hangs below it."""
    numa = doc["numa"]
    counts = sorted(set(numa["cpus_per_node"]))
    cpus = f"{counts[0]} CPUs" if len(counts) == 1 else f"{'/'.join(map(str, counts))} CPUs"
    parts = [f"{numa['nodes']} NUMA node{'s' if numa['nodes'] != 1 else ''} x {cpus}"]
    for row in doc["controllers"]:
        below = [*_count_disks(row["disks"]), *_count_nics(row["nics"])]
        link = _link_text(row["link"])
        head = " ".join(x for x in (row["ids"], row["driver"], link) if x)
        parts.append(f"{head} ({', '.join(below)})" if below else head)
    parts.extend(_count_disks(doc["disks"]))
    parts.extend(_count_nics(doc["nics"]))
    return "; ".join(parts)


def _link_text(link: list[Any] | None) -> str | None:
    if not link or link[0] is None or link[1] is None:
        return None
    return f"x{link[1]} {link[0]:g} GT/s"


def _count_disks(disks: list[Json]) -> list[str]:
    groups: dict[str, int] = {}
    for d in disks:
        label = " ".join(
            x for x in (d["class"], human_bytes(d["size_bytes"]), d["model"]) if x is not None
        )
        groups[label] = groups.get(label, 0) + 1
    return [f"{n} {label}" for label, n in groups.items()]


def _count_nics(nics: list[Json]) -> list[str]:
    groups: dict[str, int] = {}
    for nic in nics:
        speed = nic["speed_mbps"]
        label = f"nic {nic['driver'] or '?'}" + (f" {speed / 1000:g} Gb/s" if speed else "")
        groups[label] = groups.get(label, 0) + 1
    return [f"{n} {label}" if n > 1 else label for label, n in groups.items()]
