"""Modelled disks of every kind: a spec's `model:` map read into a model, and the nbdkit
plugin (C source and key=value parameters) that serves it.

    hdd           tuner/lab/hdd.py (parameters, formulas), tuner/lab/hdd.c and hdd_model.h
    ssd           tuner/lab/ssd.py, tuner/lab/ssd.c
    raid0, raid5  tuner/lab/raid.py, tuner/lab/raid.c over hdd_model.h's drives
    all           faults (tuner/lab/faults.py, tuner/lab/disk.h)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from tuner.lab import hdd, raid, ssd
from tuner.lab.faults import KEYS as FAULT_KEYS
from tuner.lab.faults import fault_params, parse_faults
from tuner.lab.hdd import HddModel
from tuner.lab.raid import RaidModel, stats_path
from tuner.lab.sizes import parse_size
from tuner.lab.ssd import SsdModel

Model = HddModel | SsdModel | RaidModel
KINDS = ("hdd", "ssd", *raid.KINDS)
_HERE = Path(__file__).parent
SOURCES = {
    "hdd": _HERE / "hdd.c",
    "ssd": _HERE / "ssd.c",
    "raid0": _HERE / "raid.c",
    "raid5": _HERE / "raid.c",
}
_BOUNDS = {"hdd": hdd.BOUNDS, "ssd": ssd.BOUNDS, "raid0": raid.BOUNDS, "raid5": raid.BOUNDS}
_SIZES: dict[str, tuple[str, ...]] = {"hdd": (), "ssd": ssd.SIZES, "raid0": (), "raid5": ()}


def parse_model(raw: object, size_bytes: int, fail: Callable[[str], Exception]) -> Model:
    """Check a spec's `model:` mapping against its kind's allow-list; `fail(why)` builds the
    error. `size_bytes` is the disk's, for the faults' regions."""
    if not isinstance(raw, dict):
        raise fail(f"model must be a mapping like {{kind: hdd, rpm: 7200}}, got {_kind(raw)}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise fail(f"model: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    bounds = _BOUNDS[kind]
    known = ("kind", *bounds, *(("member",) if kind in raid.KINDS else ()), *FAULT_KEYS)
    for key in raw:
        if key not in known:
            raise fail(f"model: unknown key {key!r} (known: {', '.join(known)})")
    values: dict[str, Any] = {"kind": kind, "faults": parse_faults(raw, size_bytes, fail)}
    values.update(_numbers(raw, kind, fail))
    if kind == "hdd":
        disk = HddModel(**values)
        hdd.check_model(disk, fail)
        return disk
    if kind == "ssd":
        return SsdModel(**values)
    return _raid(raw, values, fail)


def _raid(raw: dict[str, Any], values: dict[str, Any], fail: Callable[[str], Exception]) -> Model:
    """A RAID set: its own numbers, then its members' `member:` map (an hdd model's keys,
    faults excluded: they are the set's)."""
    kind = values["kind"]
    members = values.get("members", RaidModel.members)
    if members < raid.MIN_MEMBERS[kind]:
        raise fail(f"model: {kind} needs at least {raid.MIN_MEMBERS[kind]} members, got {members}")
    member_raw = raw.get("member", {"kind": "hdd"})
    if not isinstance(member_raw, dict) or member_raw.get("kind", "hdd") != "hdd":
        like = "{kind: hdd, rpm: 7200}"
        raise fail(f"model: member must be a mapping like {like}, got {member_raw!r}")
    for key in member_raw:
        if key != "kind" and key not in hdd.BOUNDS:
            known = ", ".join(("kind", *hdd.BOUNDS))
            raise fail(f"model: member: unknown key {key!r} (known: {known})")

    def in_member(why: str) -> Exception:
        return fail(f"model: member: {why.removeprefix('model: ')}")

    member = HddModel(**_numbers(member_raw, "hdd", in_member))
    hdd.check_model(member, in_member)
    return RaidModel(**values, member=member)


def _numbers(raw: dict[str, Any], kind: str, fail: Callable[[str], Exception]) -> dict[str, Any]:
    """The numeric keys of `raw` that `kind` allows, checked against their bounds."""
    bounds = _BOUNDS[kind]
    values: dict[str, Any] = {}
    for key, (integer, low, high) in bounds.items():
        if key not in raw:
            continue
        value = raw[key]
        if key in _SIZES[kind] and isinstance(value, str):
            parsed = parse_size(value)  # 256MiB as well as 268435456
            value = value if parsed is None else parsed
        number = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, number) or not low <= value <= high:
            what = "an integer" if integer else "a number"
            raise fail(f"model: {key} must be {what} from {low:g} to {high:g}, got {value!r}")
        values[key] = value if integer else float(value)
    return values


def plugin_source(model: Model) -> Path:
    """The C source of the nbdkit plugin that serves `model`."""
    return SOURCES[model.kind]


def plugin_params(model: Model, size_bytes: int, data_file: str) -> list[str]:
    """The key=value parameters the plugin takes for this model over `data_file`; a RAID
    set's also name its stats file (beside the data file) and its members' mechanics."""
    params = [f"file={data_file}", f"size={size_bytes}"]
    if isinstance(model, RaidModel):
        params += [f"level={model.level}", f"stats={stats_path(data_file)}"]
        params += [f"members={model.members}", f"stripe_kib={model.stripe_kib}"]
        params += _fields(model.member)
    else:
        params += _fields(model)
    return params + fault_params(model.faults)


def _fields(model: HddModel | SsdModel) -> list[str]:
    return [
        f"{item.name}={getattr(model, item.name)}"
        for item in fields(model)
        if item.name not in ("kind", "faults")
    ]


def nominal_mbps(model: Model) -> float:
    """The rate a modelled disk is listed with: an HDD's outer zone, an SSD's interface, a
    RAID set's data members' outer zones together."""
    if isinstance(model, RaidModel):
        return model.member.outer_mbps * model.data_members
    return model.outer_mbps if isinstance(model, HddModel) else model.mbps


def describe(model: Model) -> tuple[str, str]:
    """Its rate and what it is, for a table: ('200-100 MB/s', 'hdd 7200 rpm')."""
    if isinstance(model, HddModel):
        return f"{model.outer_mbps:g}-{model.inner_mbps:g} MB/s", f"hdd {model.rpm} rpm"
    if isinstance(model, RaidModel):
        what = f"{model.kind} {model.members} x hdd {model.member.rpm} rpm, {model.stripe_kib} KiB"
        return f"{nominal_mbps(model):g} MB/s", what
    return f"{model.mbps:g} MB/s", f"ssd {model.channels} ch"


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__
