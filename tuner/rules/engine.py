"""Evaluate the rule base over a host's targets: findings, and why each rule did or did not fire."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from tuner.facts.target import Target
from tuner.rules.conditions import holds
from tuner.rules.model import (
    Condition,
    Explanation,
    FactRef,
    Finding,
    Rule,
    RuleBase,
    Setting,
    SettingRec,
)
from tuner.rules.templates import fill, plural
from tuner.tunables.registry import TUNABLES
from tuner.tunables.table import IMPLEMENTATIONS

# The fact holding a tunable's current value, where targets carry one: a bound such as
# "at least 4096" must never lower a value that is already better.
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Evaluation:
    """What advise reports: findings (most severe first) and one explanation per rule."""

    findings: tuple[Finding, ...]
    explanations: tuple[Explanation, ...]


def evaluate(
    base: RuleBase,
    targets: dict[str, list[Target]],
    workload: str | None,
    resembles: Collection[str] = (),
) -> Evaluation:
    """Run every rule concerning `workload`, or one of the profiles it `resembles` (a user's
    fio job judged by what it does: tuner/trials/jobkind.py), over the targets of its kind."""
    findings: list[Finding] = []
    explanations: list[Explanation] = []
    for rule in base.rules:
        if not any(rule.concerns(name) for name in (workload, *resembles)):
            explanations.append(
                Explanation(rule.id, "other workload", f"concerns {', '.join(rule.workloads)}")
            )
            continue
        fired, explanation = _run(rule, targets.get(rule.applies_to, []))
        findings.extend(fired)
        explanations.append(explanation)
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.lesson, f.rule, f.target))
    return Evaluation(tuple(findings), tuple(explanations))


def _run(rule: Rule, targets: list[Target]) -> tuple[list[Finding], Explanation]:
    if not targets:
        return [], Explanation(rule.id, "no targets", f"this host has no {rule.applies_to} targets")
    fired: list[Finding] = []
    unknown: dict[str, set[str]] = {}
    for target in targets:
        results = [(c, holds(c, target.facts)) for c in rule.when]
        if any(result is False for _, result in results):
            continue
        undecided = [c for c, result in results if result is None]
        if undecided:
            # A fact of the wrong type (a word where a number was expected) is as good as
            # unknown: the rule must not fire on it.
            missing = {name for c in undecided for name in _unknown(c, target)}
            unknown[target.name] = missing or {c.fact for c in undecided}
            continue
        fired.append(_finding(rule, target))
    if fired:
        names = ", ".join(f.target for f in fired)
        return fired, Explanation(rule.id, "fired", f"on {names}")
    if unknown:
        detail = "; ".join(f"{name}: {', '.join(sorted(facts))}" for name, facts in unknown.items())
        facts_unknown = tuple(sorted(set().union(*unknown.values())))
        return [], Explanation(rule.id, "facts unknown", detail, facts_unknown)
    conditions = " and ".join(c.text for c in rule.when)
    return [], Explanation(
        rule.id,
        "condition false",
        f"{conditions} holds on none of {len(targets)} {plural('target', len(targets))}",
    )


def _unknown(condition: Condition, target: Target) -> list[str]:
    """The facts of a condition that the target does not know."""
    names = [condition.fact]
    if isinstance(condition.value, FactRef):
        names.append(condition.value.name)
    return [name for name in names if target.facts.get(name) is None]


def _finding(rule: Rule, target: Target) -> Finding:
    facts = target.facts
    return Finding(
        rule=rule.id,
        title=rule.title,
        lesson=rule.lesson,
        severity=rule.severity,
        target=target.name,
        evidence=fill(rule.evidence, facts),
        recommendation=fill(rule.recommend, facts),
        settings=tuple(_setting(rec, target) for rec in rule.settings),
        sources=rule.sources,
        workloads=rule.workloads,
    )


def _setting(rec: SettingRec, target: Target) -> Setting:
    scope = TUNABLES[rec.key].scope
    where = "host" if scope == "host" else target.name
    impl = IMPLEMENTATIONS.get(rec.key)
    fact = impl.current_fact if impl is not None else None
    current = target.facts.get(fact) if fact else None
    if rec.range is not None:
        span = (_resolve(rec.range[0], target), _resolve(rec.range[1], target))
        return Setting(rec.key, where, None, "range", current, span)
    if rec.at_least is not None:
        bound = _resolve(rec.at_least, target)
        better = isinstance(current, (int, float)) and current >= bound
        return Setting(rec.key, where, current if better else bound, "at_least", current)
    if rec.at_most is not None:
        bound = _resolve(rec.at_most, target)
        better = isinstance(current, (int, float)) and current <= bound
        return Setting(rec.key, where, current if better else bound, "at_most", current)
    return Setting(rec.key, where, _resolve(rec.value, target), "value", current)


def _resolve(value: Any, target: Target) -> Any:
    """A setting value with {fact} placeholders filled, as a number when it reads as one."""
    if not isinstance(value, str):
        return value
    text = fill(value, {k: "" if v is None else str(v) for k, v in target.facts.items()})
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
