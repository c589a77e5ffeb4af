"""Lab specs: the YAML that describes buses, disks and an optional stripe or file system.

A spec is checked whole before anything is created, and every mistake is reported as one line
naming the file and the field (`three.yaml: disks[1] (d1): iops must be a positive integer`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import BadInput
from tuner.lab.modelled import Model, nominal_mbps, parse_model
from tuner.lab.netspec import NetworkSpec, parse_network
from tuner.lab.sizes import MIB, parse_size
from tuner.yaml_text import load_yaml, read_text_file

SPECS_DIR = Path(__file__).with_name("specs")
STRIPES = ("btrfs-raid0",)
FILE_SYSTEMS = ("xfs", "ext4")
MIN_DISK_BYTES = 64 * MIB
# mkfs.xfs refuses file systems below 300 MiB; btrfs needs room for its chunks on each member.
MIN_FS_BYTES = {"xfs": 300 * MIB, "ext4": 64 * MIB}
MIN_STRIPE_MEMBER_BYTES = 256 * MIB
MIN_MODEL_BYTES = 256 * MIB
# btrfs raid0 submits I/O in 64 KiB pieces and block throttling counts them before merging, so
# a member's IOPS cap also caps its bandwidth at iops x 64 KiB (docs/design.md, "Things learned").
BTRFS_PIECE_BYTES = 64 * 1024
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")  # fullmatch: `$` would let a final newline in
# A disk's starting queue settings (`start:`), written after the lab's own reset so a lab can
# begin where a real host does (an old distribution's, a badly tuned one's). Bounds: what the
# block layer itself takes; the tunables check each value again against the device when `up`
# writes it (a scheduler the kernel lacks, nr_requests above the tag depth: exit 1, undone).
START_SCHEDULERS = ("none", "mq-deadline", "bfq", "kyber")
START_BOUNDS = {"read_ahead_kb": (0, 65536), "nr_requests": (4, 4096), "max_sectors_kb": (4, 32768)}
START_KEYS = ("scheduler", *START_BOUNDS)
MAX_MBPS = 1_000_000.0
MAX_SPEC_BYTES = (
    1 << 20
)  # the largest built-in is under 2 KiB; a generated lab of many disks well under this
"""A ceiling in MB/s (1 TB/s): above any device, and below where float() of an int fails."""
MAX_SPEC_BYTES = 1 << 20
"""A lab spec file: the built-ins are under 2 KiB; a file of gigabytes is not a lab."""


@dataclass(frozen=True)
class BusSpec:
    """A bus: read and write ceilings in MB/s (10^6 bytes per second)."""

    name: str
    read_mbps: float
    write_mbps: float


@dataclass(frozen=True)
class DiskSpec:
    """A disk: MB/s and IOPS ceilings, a size, the bus it sits on and an optional file system.

    A modelled disk (`model` set) has no ceilings: its timing is its model's, served by nbdkit;
    `read_mbps` and `write_mbps` are then its nominal rate (an HDD's outer zone, an SSD's
    interface) and `iops` is 0.
    """

    name: str
    bus: str | None
    read_mbps: float
    write_mbps: float
    iops: int
    size_bytes: int
    fs: str | None
    model: Model | None = None
    start: tuple[tuple[str, str], ...] = ()  # (queue attribute, value): written after the reset


@dataclass(frozen=True)
class LabSpec:
    """A whole lab: its buses, its disks, and an optional stripe over all the disks."""

    name: str
    description: str
    buses: tuple[BusSpec, ...]
    disks: tuple[DiskSpec, ...]
    stripe: str | None
    source: str
    network: NetworkSpec | None = None  # a path between two namespaces (tuner/lab/netspec.py)

    def disks_on(self, bus: str | None) -> tuple[DiskSpec, ...]:
        """The disks on `bus` (None: the disks on no bus), in spec order."""
        return tuple(d for d in self.disks if d.bus == bus)

    def modelled_bus(self, bus: str) -> bool:
        """True if `bus` carries modelled disks (a word their servers share, not a loop
        device); a bus carries either kind of disk, never both."""
        return any(d.model is not None for d in self.disks_on(bus))


def builtin_spec_names() -> list[str]:
    """The names of the specs shipped with iotuner."""
    return sorted(p.stem for p in SPECS_DIR.glob("*.yaml"))


def load_spec(name_or_path: str) -> LabSpec:
    """A built-in spec by name, or a user's spec from a .yaml file; BadInput if neither works."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or "/" in name_or_path or path.is_file():
        if not path.is_file():
            raise BadInput(f"{name_or_path}: no such spec file")
        text = read_text_file(path, MAX_SPEC_BYTES, "lab spec")
        return parse_spec(text, str(path), default_name=path.stem)
    builtin = SPECS_DIR / f"{name_or_path}.yaml"
    if not builtin.is_file():
        known = ", ".join(builtin_spec_names())
        raise BadInput(f"no built-in lab spec {name_or_path!r} (built-ins: {known}; or a file)")
    return parse_spec(builtin.read_text(), name_or_path, default_name=name_or_path)


def parse_spec(text: str, source: str, default_name: str) -> LabSpec:
    """Check and build a spec from YAML text; `source` names it in error messages."""
    data = load_yaml(text, source)  # node and depth budgets: no alias bomb, no deep nesting
    return _Checker(source).spec(data, default_name)


class _Checker:
    """Walks the parsed YAML, raising BadInput at the first field that is wrong."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, why: str) -> BadInput:
        return BadInput(f"{self.source}: {where}: {why}")

    def mapping(self, value: object, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a mapping, got {_kind(value)}")
        for key in value:
            if key not in allowed:
                raise self.fail(where, f"unknown key {key!r} (known: {', '.join(allowed)})")
        return value

    def rate(self, entry: dict[str, Any], key: str, where: str) -> float:
        value = entry.get(key)
        # Comparisons first: NaN fails them, an infinity or a 400-digit int is above the bound.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(where, f"{key} must be a positive number of MB/s, got {value!r}")
        if not 0 < value <= MAX_MBPS:
            raise self.fail(where, f"{key} must be a positive number of MB/s, got {value!r}")
        return float(value)

    def name(self, entry: dict[str, Any], where: str, seen: set[str]) -> str:
        value = entry.get("name")
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            raise self.fail(where, f"name must match {_NAME.pattern}, got {value!r}")
        if value in seen:
            raise self.fail(where, f"name {value!r} is used twice")
        seen.add(value)
        return value

    def spec(self, data: object, default_name: str) -> LabSpec:
        keys = ("name", "description", "buses", "disks", "stripe", "network")
        top = self.mapping(data, "spec", keys)
        name = top.get("name", default_name)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise self.fail("name", f"must match {_NAME.pattern}, got {name!r}")
        description = top.get("description", "")
        if not isinstance(description, str):
            raise self.fail("description", f"expected text, got {_kind(description)}")
        network = parse_network(top["network"], self.fail) if "network" in top else None
        seen: set[str] = set()
        buses = tuple(self.bus(b, i, seen) for i, b in enumerate(self.items(top, "buses", False)))
        bus_names = {b.name for b in buses}
        disks = tuple(
            self.disk(d, i, seen, bus_names)
            for i, d in enumerate(self.items(top, "disks", network is None))
        )
        for bus in buses:
            self.bus_disks(bus, [d for d in disks if d.bus == bus.name])
        stripe = self.stripe(top.get("stripe"), disks, network)
        return LabSpec(name, description.strip(), buses, disks, stripe, self.source, network)

    def bus_disks(self, bus: BusSpec, disks: list[DiskSpec]) -> None:
        where = f"bus {bus.name!r}"
        if not disks:
            raise self.fail(where, "no disk sits on it")
        modelled = [d.name for d in disks if d.model is not None]
        if modelled and len(modelled) < len(disks):
            raise self.fail(
                where, f"carries modelled disks {modelled} and throttled ones; one kind per bus"
            )
        if modelled and bus.read_mbps != bus.write_mbps:
            raise self.fail(
                where,
                f"a bus of modelled disks has one rate: read_mbps {bus.read_mbps:g} and "
                f"write_mbps {bus.write_mbps:g} must be equal",
            )

    def items(self, top: dict[str, Any], key: str, required: bool) -> list[Any]:
        value = top.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list) or (required and not value):
            raise self.fail(key, f"expected a non-empty list, got {_kind(value)}")
        return value

    def bus(self, raw: object, index: int, seen: set[str]) -> BusSpec:
        where = f"buses[{index}]"
        entry = self.mapping(raw, where, ("name", "read_mbps", "write_mbps"))
        name = self.name(entry, where, seen)
        where = f"{where} ({name})"
        read, write = self.rate(entry, "read_mbps", where), self.rate(entry, "write_mbps", where)
        return BusSpec(name, read, write)

    def disk(self, raw: object, index: int, seen: set[str], buses: set[str]) -> DiskSpec:
        where = f"disks[{index}]"
        keys = ("name", "bus", "read_mbps", "write_mbps", "iops", "size", "fs", "model", "start")
        entry = self.mapping(raw, where, keys)
        name = self.name(entry, where, seen)
        where = f"{where} ({name})"
        bus = entry.get("bus")
        if bus is not None and (not isinstance(bus, str) or bus not in buses):
            known = ", ".join(sorted(buses)) or "none defined"
            raise self.fail(where, f"bus {bus!r} is not defined (buses: {known})")
        size = parse_size(entry.get("size"))
        if size is None:
            raise self.fail(where, f"size must be like 1GiB or 512MiB, got {entry.get('size')!r}")
        size = size // MIB * MIB  # loop devices and O_DIRECT fills want whole MiB
        if size < MIN_DISK_BYTES:
            raise self.fail(where, f"size {size} bytes is below the 64 MiB minimum")
        fs = entry.get("fs")
        if fs is not None and fs not in FILE_SYSTEMS:
            raise self.fail(where, f"fs must be one of {', '.join(FILE_SYSTEMS)}, got {fs!r}")
        if fs is not None and size < MIN_FS_BYTES[fs]:
            raise self.fail(where, f"{fs} needs at least {MIN_FS_BYTES[fs] // MIB} MiB")
        start = self.start(entry.get("start", {}), where)
        if "model" in entry:
            return self.modelled(entry, where, DiskSpec(name, bus, 0, 0, 0, size, fs, None, start))
        iops = entry.get("iops")
        if isinstance(iops, bool) or not isinstance(iops, int) or iops <= 0:
            raise self.fail(where, f"iops must be a positive integer, got {iops!r}")
        read, write = self.rate(entry, "read_mbps", where), self.rate(entry, "write_mbps", where)
        return DiskSpec(name, bus, read, write, iops, size, fs, None, start)

    def start(self, raw: object, where: str) -> tuple[tuple[str, str], ...]:
        """A disk's starting queue settings, in the order the lab writes them."""
        entry = self.mapping(raw, f"{where}: start", START_KEYS)
        found: dict[str, str] = {}
        scheduler = entry.get("scheduler")
        if scheduler is not None:
            if not isinstance(scheduler, str) or scheduler not in START_SCHEDULERS:
                known = ", ".join(START_SCHEDULERS)
                raise self.fail(
                    where, f"start: scheduler must be one of {known}, got {scheduler!r}"
                )
            found["scheduler"] = scheduler
        for key, (low, high) in START_BOUNDS.items():
            value = entry.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise self.fail(
                    where, f"start: {key} must be an integer from {low} to {high}, got {value!r}"
                )
            found[key] = str(value)
        return tuple(found.items())

    def modelled(self, entry: dict[str, Any], where: str, disk: DiskSpec) -> DiskSpec:
        """A disk whose timing is a model's: no ceilings; on a bus, its bytes cross the bus's
        shared clock (`disk.h`)."""
        for key in ("read_mbps", "write_mbps", "iops"):
            if key in entry:
                raise self.fail(
                    where, f"{key} is a throttled disk's ceiling; a modelled disk has its model"
                )
        if disk.size_bytes < MIN_MODEL_BYTES:
            raise self.fail(where, f"a modelled disk needs at least {MIN_MODEL_BYTES // MIB} MiB")
        model = parse_model(entry["model"], disk.size_bytes, lambda why: self.fail(where, why))
        rate = nominal_mbps(model)
        return DiskSpec(
            disk.name, disk.bus, rate, rate, 0, disk.size_bytes, disk.fs, model, disk.start
        )

    def stripe(
        self, value: object, disks: tuple[DiskSpec, ...], network: NetworkSpec | None
    ) -> str | None:
        with_fs = [d.name for d in disks if d.fs]
        at_ends = self.end_disks(disks, network)
        # A lab has one scratch mount (Lab.mountpoint); a network's ends may each have their
        # own disk (LabNetwork.sender_mount, receiver_mount).
        if len(with_fs) > 1 and sorted(with_fs) != sorted(at_ends):
            raise self.fail(
                "disks",
                f"only one disk may carry a file system, or one at each network end, got {with_fs}",
            )
        if value is None:
            return None
        if value not in STRIPES:
            why = " (md is not available here)" if str(value).startswith("md") else ""
            raise self.fail("stripe", f"must be one of {', '.join(STRIPES)}, got {value!r}{why}")
        if with_fs:
            raise self.fail("stripe", f"excludes the file system on disk {with_fs[0]!r}")
        if len(disks) < 2:
            raise self.fail("stripe", f"needs at least 2 disks, got {len(disks)}")
        if modelled := [d.name for d in disks if d.model]:
            raise self.fail("stripe", f"is not built over modelled disks yet, got {modelled}")
        for disk in disks:
            where = f"disk {disk.name!r}"
            if disk.size_bytes < MIN_STRIPE_MEMBER_BYTES:
                raise self.fail(where, "a btrfs raid0 member needs at least 256 MiB")
            fastest = max(disk.read_mbps, disk.write_mbps) * 1e6
            if disk.iops * BTRFS_PIECE_BYTES < fastest:
                need = -(-int(fastest) // BTRFS_PIECE_BYTES)
                raise self.fail(
                    where,
                    f"iops {disk.iops} caps a btrfs raid0 member at "
                    f"{disk.iops * BTRFS_PIECE_BYTES / 1e6:.0f} MB/s (64 KiB pieces), below its "
                    f"{fastest / 1e6:.0f} MB/s; give it at least {need} iops",
                )
        return str(value)

    def end_disks(self, disks: tuple[DiskSpec, ...], network: NetworkSpec | None) -> list[str]:
        """The disks the network's ends name; each must exist, carry a file system and be
        named by one end only."""
        if network is None:
            return []
        by_name = {d.name: d for d in disks}
        named = []
        for role, host in (("sender", network.sender), ("receiver", network.receiver)):
            if host.disk is None:
                continue
            where = f"network.{role}"
            disk = by_name.get(host.disk)
            if disk is None:
                known = ", ".join(by_name) or "none defined"
                raise self.fail(where, f"disk {host.disk!r} is not defined (disks: {known})")
            if disk.fs is None:
                raise self.fail(where, f"disk {host.disk!r} has no file system (fs: xfs or ext4)")
            if host.disk in named:
                raise self.fail(where, f"disk {host.disk!r} is already the sender's")
            named.append(host.disk)
        return named


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__
