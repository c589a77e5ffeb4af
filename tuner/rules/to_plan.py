"""Findings merged into a plan: the step from the rules' advice to the plan `advise` writes.

It lives with the rules, above `tuner/plan.py`: the plan module knows plans, not findings, so
everything that reads or applies a plan (apply, the daemon, the Ansible modules) loads no rule
code, and the rules' view may show a plan without the two importing each other.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from tuner.plan import PLAN_VERSION, Plan, PlanEntry, SearchRange, host_field, plan_field
from tuner.rules.model import Finding


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
        host=host_field(host),
        source="advise",
        workload=None if workload is None else plan_field(workload, fallback="workload"),
        entries=tuple(chosen.values()),
        search=tuple(search.values()),
    )


def _tighter(bound: str, new: Any, old: Any) -> bool:
    if not isinstance(new, (int, float)) or not isinstance(old, (int, float)):
        return False
    return (bound == "at_least" and new > old) or (bound == "at_most" and new < old)
