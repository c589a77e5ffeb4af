"""Plans: the settings to apply to one host, written by `advise`/`tune --plan-out`, read by apply.

A plan is a YAML file (docs/plan-format.md) so a person can read and edit it and Ansible can load
it as variables. Only concrete changes are entries; ranges meant for the search are kept apart.

A plan is input from anyone who could write the file, and its fields end up in files root owns
(udev rules, sysctl.d, a systemd unit) and on the terminal: `check_plan` holds every field to an
allow-list (a pattern, a type, a size) and refuses unknown keys, and apply renders only checked
plans (tuner/apply/render.py). The writers here produce plans that pass it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tuner.codec import DecodeError, decode, encode
from tuner.errors import BadInput
from tuner.outfile import write_file
from tuner.tunables.naming import canonical_target, target_problem
from tuner.tunables.registry import TUNABLES
from tuner.yaml_text import load_yaml, read_text_file

PLAN_VERSION = 1
DAEMON_SOURCE = "daemon"
"""The source of the change sets `iotuner daemon` makes itself (drift re-applied, new disks)."""
SOURCES = ("advise", "tune", DAEMON_SOURCE)
MAX_PLAN_BYTES = 1 << 20
"""A plan of every tunable on a thousand disks is well below this."""
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_WORKLOAD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+@ -]{0,127}")
_CREATED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
                      r"(?:Z|[+-][0-9]{2}:[0-9]{2})?")  # fmt: skip
_TEXT = re.compile(r"[A-Za-z0-9 ._:,;()/+=#@'%<>*-]{0,200}")
"""A reason or a current value shown as text: no newline, quote, backslash, brace or bracket."""
_MEASURED_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_MAX_DEPTH = 8


@dataclass(frozen=True)
class PlanEntry:
    """Set `key` on `target` (a device, an interface, or "host") to `value`."""

    key: str
    target: str
    value: Any
    current: Any = None
    reason: str = ""
    match: str | None = None
    """How apply's udev rule finds the device: None, by its stable identity (WWN, serial,
    by-path, loop backing file); "name", by its kernel name, which another disk may have
    after a reboot: only for a disk with nothing stable, and only when the plan says so."""


MATCH_BY = ("name",)
"""What an entry's `match` may say besides nothing."""


@dataclass(frozen=True)
class SearchRange:
    """A range a rule leaves open for `iotuner tune` to search."""

    key: str
    target: str
    low: Any
    high: Any
    reason: str = ""


@dataclass(frozen=True)
class Plan:
    """What to change on one host, why, and (after a tune) what it measured."""

    plan_version: int
    created: str
    host: str
    source: str
    workload: str | None
    entries: tuple[PlanEntry, ...]
    search: tuple[SearchRange, ...] = ()
    measured: dict[str, Any] | None = None


def plan_field(text: str, pattern: re.Pattern[str] = _WORKLOAD, fallback: str = "host") -> str:
    """`text` made to fit a header field's pattern: other characters become "_" (a host name
    or a job file's name from the system or the user); `fallback` when nothing is left."""
    fitted = re.sub(r"[^A-Za-z0-9._:+@ -]", "_", text).strip(" ._:+@-")[:127]
    return fitted if pattern.fullmatch(fitted) else fallback


def host_field(text: str) -> str:
    """`text` made to fit the plan's `host` field (see `plan_field`)."""
    return plan_field(text, _HOST)


def plan_text(plan: Plan) -> str:
    """The plan as the YAML text `write_plan` writes."""
    document = encode(plan)
    for entry in document["entries"]:
        if entry["match"] is None:
            del entry["match"]  # the usual case, and the form plans had before `match`
    return "# iotuner plan: see docs/plan-format.md\n" + yaml.safe_dump(document, sort_keys=False)


def write_plan(plan: Plan, path: Path) -> None:
    """Write the plan as YAML, atomically (a reader never sees half a plan), as every output
    file is written (`tuner.outfile`): nothing planted in a shared directory is followed.
    BadInput when `path` is a directory or its directory is missing.
    """
    write_file(path, plan_text(plan), mode=0o644, what="plan")


def read_plan(path: Path) -> Plan:
    """Load and check a plan; BadInput names the file and the entry at fault.

    A regular file of at most MAX_PLAN_BYTES: a FIFO or a device would block or never end.
    """
    return parse_plan(read_plan_text(path), str(path))


def read_plan_text(path: Path) -> str:
    """A plan file's text, unchecked: a regular UTF-8 file of at most MAX_PLAN_BYTES."""
    return read_text_file(path, MAX_PLAN_BYTES, "plan")


def parse_plan(text: str, where: str) -> Plan:
    """Load and check a plan's YAML text; BadInput names `where` and the entry at fault."""
    if len(text) > MAX_PLAN_BYTES:
        raise BadInput(f"{where}: larger than {MAX_PLAN_BYTES >> 20} MiB: not a plan")
    raw = load_yaml(text, where)  # node and depth budgets: no alias bomb reaches the walk
    version = raw.get("plan_version") if isinstance(raw, dict) else None
    if type(version) is not int or version != PLAN_VERSION:  # True == 1 in Python
        raise BadInput(f"{where}: not an iotuner plan (plan_version {PLAN_VERSION} expected)")
    try:
        _known_fields(Plan, raw, "")
        for part, cls in (("entries", PlanEntry), ("search", SearchRange)):
            items = raw.get(part)
            for i, item in enumerate(items if isinstance(items, list) else []):
                _known_fields(cls, item, f"{part}[{i}]: ")
        plan = decode(Plan, raw, "plan")
    except DecodeError as err:
        raise BadInput(f"{where}: {err}") from None
    return check_plan(plan, where)


def _known_fields(cls: type, data: Any, label: str) -> None:
    if not isinstance(data, dict):
        raise DecodeError(f"{label}expected a mapping, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    for name in data:
        if name not in known:
            raise DecodeError(f"{label}unknown field {str(name)[:40]!r}")


def check_plan(plan: Plan, where: str) -> Plan:
    """`plan` when every field is one a plan may hold; BadInput naming `where`, the entry and
    the field otherwise. Whether the values suit this host is render's to say."""

    def bad(why: str) -> BadInput:
        return BadInput(f"{where}: {why}")

    if type(plan.plan_version) is not int or plan.plan_version != PLAN_VERSION:
        raise bad(f"not an iotuner plan (plan_version {PLAN_VERSION} expected)")
    if not isinstance(plan.host, str) or not _HOST.fullmatch(plan.host):
        raise bad(f"host: {_shown(plan.host)} is not a host name (letters, digits, . _ -)")
    if plan.source not in SOURCES:
        raise bad(f"source: {_shown(plan.source)} is not one of {', '.join(SOURCES)}")
    if not isinstance(plan.created, str) or not _CREATED.fullmatch(plan.created):
        raise bad(f"created: {_shown(plan.created)} is not an ISO 8601 time")
    if plan.workload is not None and not (
        isinstance(plan.workload, str) and _WORKLOAD.fullmatch(plan.workload)
    ):
        raise bad(f"workload: {_shown(plan.workload)} is not a workload name")
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(plan.entries):
        label = f"entries[{i}]"
        _check_setting(entry.key, entry.target, f"{where}: {label}")
        if _value_problem(entry.value):
            raise bad(f"{label}: value: {_value_problem(entry.value)}")
        if entry.current is not None and _value_problem(entry.current):
            raise bad(f"{label}: current: {_value_problem(entry.current)}")
        if not isinstance(entry.reason, str) or not _TEXT.fullmatch(entry.reason):
            raise bad(f"{label}: reason: {_shown(entry.reason)} is not a short line of text")
        if entry.match is not None and entry.match not in MATCH_BY:
            raise bad(f"{label}: match: {_shown(entry.match)} is not one of {', '.join(MATCH_BY)}")
        slot = (entry.key, canonical_target(entry.key, entry.target))
        if slot in seen:
            raise bad(f"{label}: {slot[0]} on {slot[1]} is already set by entries[{seen[slot]}]")
        seen[slot] = i
    for i, rng in enumerate(plan.search):
        _check_setting(rng.key, rng.target, f"{where}: search[{i}]")
        for name, value in (("low", rng.low), ("high", rng.high)):
            if _value_problem(value):
                raise bad(f"search[{i}]: {name}: {_value_problem(value)}")
        if not isinstance(rng.reason, str) or not _TEXT.fullmatch(rng.reason):
            raise bad(f"search[{i}]: reason: {_shown(rng.reason)} is not a short line of text")
    if plan.measured is not None:
        # apply --measure reads measured.target: a list or a string there was a traceback.
        if not isinstance(plan.measured, dict):
            kind = type(plan.measured).__name__
            raise bad(f"measured: expected a mapping of figures, got {kind}")
        why = _data_problem(plan.measured, 0)
        if why:
            raise bad(f"measured: {why}")
    return plan


def _check_setting(key: object, target: object, label: str) -> None:
    if not isinstance(key, str) or key not in TUNABLES:
        raise BadInput(f"{label}: unknown tunable {_shown(key)}")
    why = target_problem(key, target)
    if why is not None:
        raise BadInput(f"{label}: target {_shown(target)}: {why}")


def _value_problem(value: object) -> str | None:
    """Why `value` cannot be a setting's value: an int, a name, or a list of ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return None if abs(value) < 2**256 else "too large a number"
    if isinstance(value, str) and _TEXT.fullmatch(value):
        return None
    if (
        isinstance(value, list | tuple)
        and len(value) <= 8
        and all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**256 for v in value)
    ):
        return None
    return f"expected an integer, a name or a list of integers, got {_shown(value)}"


def _data_problem(data: object, depth: int) -> str | None:
    """Why `data` is not a small JSON-like document (tune's figures), or None."""
    if depth > _MAX_DEPTH:
        return "nested too deep"
    if data is None or isinstance(data, bool | int | float):
        return None
    if isinstance(data, str):
        # tune's figures and notes: printable ASCII on one line (no escape sequence).
        if len(data) <= 500 and data.isascii() and data.isprintable():
            return None
        return f"{_shown(data)} is not a short line of text"
    if isinstance(data, list):
        if len(data) > 1000:
            return "a list of more than 1000 items"
        return next((w for item in data if (w := _data_problem(item, depth + 1))), None)
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str) or not _MEASURED_KEY.fullmatch(key):
                return f"{_shown(key)} is not a field name"
            why = _data_problem(value, depth + 1)
            if why:
                return f"{key}: {why}"
        return None
    return f"{type(data).__name__} is not allowed"


def _shown(value: object) -> str:
    return repr(value)[:60]


def plan_from_tune(
    changes: dict[tuple[str, str], Any],
    baseline: dict[tuple[str, str], Any],
    host: str,
    workload: str,
    measured: dict[str, Any],
) -> Plan:
    """A plan of the settings a confirmed tune changes, with what it measured."""
    return Plan(
        plan_version=PLAN_VERSION,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        host=plan_field(host, _HOST),
        source="tune",
        workload=plan_field(workload, fallback="workload"),
        entries=tuple(
            PlanEntry(key, target, value, baseline.get((key, target)), "tune")
            for (key, target), value in changes.items()
        ),
        measured=measured,
    )
