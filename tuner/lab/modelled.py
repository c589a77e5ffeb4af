"""Modelled disks of every kind: a spec's `model:` map read into a model, and the nbdkit
plugin (C source and key=value parameters) that serves it.

    hdd   tuner/lab/hdd.py (parameters, formulas), tuner/lab/hdd.c (the model)
    ssd   tuner/lab/ssd.py, tuner/lab/ssd.c
    both  faults (tuner/lab/faults.py, tuner/lab/disk.h)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from tuner.lab import hdd, ssd
from tuner.lab.faults import KEYS as FAULT_KEYS
from tuner.lab.faults import fault_params, parse_faults
from tuner.lab.hdd import HddModel
from tuner.lab.sizes import parse_size
from tuner.lab.ssd import SsdModel

Model = HddModel | SsdModel
KINDS = ("hdd", "ssd")
_HERE = Path(__file__).parent
SOURCES = {"hdd": _HERE / "hdd.c", "ssd": _HERE / "ssd.c"}
_BOUNDS = {"hdd": hdd.BOUNDS, "ssd": ssd.BOUNDS}
_SIZES: dict[str, tuple[str, ...]] = {"hdd": (), "ssd": ssd.SIZES}


def parse_model(raw: object, size_bytes: int, fail: Callable[[str], Exception]) -> Model:
    """Check a spec's `model:` mapping against its kind's allow-list; `fail(why)` builds the
    error. `size_bytes` is the disk's, for the faults' regions."""
    if not isinstance(raw, dict):
        raise fail(f"model must be a mapping like {{kind: hdd, rpm: 7200}}, got {_kind(raw)}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise fail(f"model: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    bounds = _BOUNDS[kind]
    known = ("kind", *bounds, *FAULT_KEYS)
    for key in raw:
        if key not in known:
            raise fail(f"model: unknown key {key!r} (known: {', '.join(known)})")
    values: dict[str, Any] = {"kind": kind, "faults": parse_faults(raw, size_bytes, fail)}
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
    if kind == "hdd":
        disk = HddModel(**values)
        hdd.check_model(disk, fail)
        return disk
    return SsdModel(**values)


def plugin_source(model: Model) -> Path:
    """The C source of the nbdkit plugin that serves `model`."""
    return SOURCES[model.kind]


def plugin_params(model: Model, size_bytes: int, data_file: str) -> list[str]:
    """The key=value parameters the plugin takes for this model over `data_file`."""
    params = [f"file={data_file}", f"size={size_bytes}"]
    for item in fields(model):
        if item.name not in ("kind", "faults"):
            params.append(f"{item.name}={getattr(model, item.name)}")
    return params + fault_params(model.faults)


def nominal_mbps(model: Model) -> float:
    """The rate a modelled disk is listed with: an HDD's outer zone, an SSD's interface."""
    return model.outer_mbps if isinstance(model, HddModel) else model.mbps


def describe(model: Model) -> tuple[str, str]:
    """Its rate and what it is, for a table: ('200-100 MB/s', 'hdd 7200 rpm')."""
    if isinstance(model, HddModel):
        return f"{model.outer_mbps:g}-{model.inner_mbps:g} MB/s", f"hdd {model.rpm} rpm"
    return f"{model.mbps:g} MB/s", f"ssd {model.channels} ch"


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__
