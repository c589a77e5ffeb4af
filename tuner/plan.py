"""Plans: the settings to apply to one host, written by `advise`/`tune --plan-out`, read by apply.

A plan is a YAML file (docs/plan-format.md) so a person can read and edit it and Ansible can load
it as variables. Only concrete changes are entries; ranges meant for the search are kept apart.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tuner.codec import DecodeError, decode, encode
from tuner.errors import BadInput
from tuner.rules.model import Finding
from tuner.tunables.registry import TUNABLES
from tuner.yaml_text import yaml_error

PLAN_VERSION = 1
DAEMON_SOURCE = "daemon"
"""The source of the change sets `iotuner daemon` makes itself (drift re-applied, new disks)."""


@dataclass(frozen=True)
class PlanEntry:
    """Set `key` on `target` (a device, an interface, or "host") to `value`."""

    key: str
    target: str
    value: Any
    current: Any = None
    reason: str = ""


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


def plan_from_findings(findings: tuple[Finding, ...], host: str, workload: str | None) -> Plan:
    """Merge the findings' settings into one entry per key and target.

    Findings come most severe first, so on a conflict of exact values the more severe rule
    wins; bounds merge to the tightest (the highest `at_least`, the lowest `at_most`).
    """
    chosen: dict[tuple[str, str], PlanEntry] = {}
    search: dict[tuple[str, str], SearchRange] = {}
    for finding in findings:
        for s in finding.settings:
            slot = (s.key, s.target)
            if s.bound == "range" and s.range is not None:
                search.setdefault(slot, SearchRange(s.key, s.target, *s.range, finding.rule))
                continue
            if s.value is None or s.value == s.current:
                continue
            entry = PlanEntry(s.key, s.target, s.value, s.current, finding.rule)
            previous = chosen.get(slot)
            if previous is None or _tighter(s.bound, entry.value, previous.value):
                chosen[slot] = entry
    return Plan(
        plan_version=PLAN_VERSION,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        host=host,
        source="advise",
        workload=workload,
        entries=tuple(chosen.values()),
        search=tuple(search.values()),
    )


def _tighter(bound: str, new: Any, old: Any) -> bool:
    if not isinstance(new, (int, float)) or not isinstance(old, (int, float)):
        return False
    return (bound == "at_least" and new > old) or (bound == "at_most" and new < old)


def plan_text(plan: Plan) -> str:
    """The plan as the YAML text `write_plan` writes."""
    return "# iotuner plan: see docs/plan-format.md\n" + yaml.safe_dump(
        encode(plan), sort_keys=False
    )


def write_plan(plan: Plan, path: Path) -> None:
    """Write the plan as YAML (atomically: a reader never sees half a plan)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(plan_text(plan))
    tmp.replace(path)


def read_plan(path: Path) -> Plan:
    """Load and check a plan; BadInput names the file and the entry at fault."""
    try:
        text = path.read_text()
    except OSError as err:
        raise BadInput(f"{path}: cannot read plan ({err})") from None
    return parse_plan(text, str(path))


def parse_plan(text: str, where: str) -> Plan:
    """Load and check a plan's YAML text; BadInput names `where` and the entry at fault."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise BadInput(yaml_error(where, err)) from None
    if not isinstance(raw, dict) or raw.get("plan_version") != PLAN_VERSION:
        raise BadInput(f"{where}: not an iotuner plan (plan_version {PLAN_VERSION} expected)")
    try:
        plan = decode(Plan, raw, "plan")
    except DecodeError as err:
        raise BadInput(f"{where}: {err}") from None
    for i, entry in enumerate(plan.entries):
        if entry.key not in TUNABLES:
            raise BadInput(f"{where}: entries[{i}]: unknown tunable {entry.key!r}")
    return plan


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
        host=host,
        source="tune",
        workload=workload,
        entries=tuple(
            PlanEntry(key, target, value, baseline.get((key, target)), "tune")
            for (key, target), value in changes.items()
        ),
        measured=measured,
    )
