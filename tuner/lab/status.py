"""`lab_status`: the recorded lab, checked against the system (devices, ceilings, mounts)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tuner.codec import DecodeError, decode
from tuner.lab import congestion, dirty, nbd, network, system, throttle
from tuner.lab.model import Lab
from tuner.lab.record import LabRecord, Step, load_record, record_path
from tuner.state import state_dir


@dataclass(frozen=True)
class LabPart:
    """One thing the record says exists, and what the system says about it now."""

    kind: str  # loop, mount, throttle, server (nbdkit), fuse (nbdfuse's mount), netns, relay
    label: str
    device: str | None
    target: str
    present: bool
    caps: dict[str, int] | None = None  # throttle: the ceilings installed now


@dataclass(frozen=True)
class LabCheck:
    """The recorded lab, its parts as found, and every disagreement as one line."""

    spec_name: str
    state: str
    record: str
    pid: int
    lab: Lab | None
    parts: tuple[LabPart, ...]
    problems: tuple[str, ...]


def lab_check() -> LabCheck | None:
    """Check the record against the system; None when no lab is recorded."""
    record = load_record(record_path(state_dir()))
    if record is None:
        return None
    parts = tuple(p for step in record.steps if (p := _part(step)) is not None)
    problems = [_problem(p) for p in parts if not p.present]
    for part in parts:
        if part.kind == "throttle" and part.present:
            problems.extend(_caps_problems(record, part))
    if record.state == "building":
        alive = _alive(record.pid)
        problems.insert(
            0,
            f"`lab up` is still building it (pid {record.pid})"
            if alive
            else f"`lab up` did not finish (pid {record.pid} is gone)",
        )
    elif record.state != "up":
        problems.insert(0, f"`lab down` could not remove all of it (state {record.state})")
    lab = None
    if record.lab is not None:
        try:
            lab = decode(Lab, record.lab)
        except DecodeError as err:
            problems.append(f"the recorded lab cannot be read: {err}")
    return LabCheck(
        record.spec_name,
        record.state,
        str(record.path),
        record.pid,
        lab,
        parts,
        tuple(p for p in problems if p),
    )


def lab_status() -> Lab | None:
    """The lab that is up, None if there is none; LabError when the system disagrees."""
    check = lab_check()
    if check is None:
        return None
    if check.problems or check.lab is None:
        why = "; ".join(check.problems) or "nothing recorded"
        raise system.LabError(f"lab {check.spec_name} is not usable: {why}; run `iotuner lab down`")
    return check.lab


def _part(step: Step) -> LabPart | None:
    if step.kind == "loop":
        device = step.device
        attached = device is not None and system.loop_backing(device) == step.target
        return LabPart("loop", step.label, device, step.target, attached)
    if step.kind == "mount":
        present = system.is_mounted(step.target)
        return LabPart("mount", step.label, step.device, step.target, present)
    if step.kind == "server":
        present = bool(nbd.processes_with(step.target, "nbdkit"))
        return LabPart("server", step.label, "nbdkit", step.target, present)
    if step.kind == "fuse":
        present = system.is_mounted(step.target) and bool(
            nbd.processes_with(str(Path(step.target) / nbd.FUSE_FILE), "nbdfuse")
        )
        return LabPart("fuse", step.label, "nbdfuse", step.target, present)
    if step.kind == "dirty":
        return LabPart("dirty", step.label, step.device, step.target, dirty.present(step))
    if step.kind == congestion.KIND:
        return LabPart(step.kind, step.label, None, step.target, congestion.present(step))
    if step.kind in network.UNDO:  # a namespace or the delay line
        return LabPart(step.kind, step.label, None, step.target, network.present(step))
    if step.kind == "throttle" and step.device is not None:
        where = str(step.detail.get("where", "v1"))
        try:
            caps = throttle.read_caps(where, step.target).as_dict()
        except OSError:
            caps = {}
        present = any(caps.values())
        return LabPart("throttle", step.label, step.device, step.target, present, caps)
    return None


def _problem(part: LabPart) -> str:
    if part.kind == "loop":
        return f"{part.label}: {part.device or 'its loop device'} is not attached to {part.target}"
    if part.kind == "mount":
        return f"{part.label}: nothing is mounted on {part.target}"
    if part.kind == "server":
        return f"{part.label}: its model server (nbdkit on {part.target}) is not running"
    if part.kind == "fuse":
        return f"{part.label}: nbdfuse is not serving {part.target}"
    if part.kind == "dirty":
        return f"{part.label}: its dirty limit ({part.target} strict_limit) is gone"
    if part.kind == congestion.KIND:
        return f"{part.label}: the congestion controls it lent are taken back ({part.target})"
    if part.kind == "netns":
        return f"{part.label}: namespace {part.target} is gone"
    if part.kind == "relay":
        return f"{part.label}: the network's delay line is not running ({part.target})"
    return f"{part.label}: no throttle rule on {part.device} ({part.target})"


def _caps_problems(record: LabRecord, part: LabPart) -> list[str]:
    wanted: dict[str, int] = next(
        (s.detail.get("caps", {}) for s in record.steps
         if s.kind == "throttle" and s.target == part.target),
        {},
    )  # fmt: skip
    now = part.caps or {}
    return [
        f"{part.label}: {key} on {part.device} is {now.get(key, 0)}, recorded {value}"
        for key, value in wanted.items()
        if int(value) != now.get(key, 0)
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
