"""Conformance of every shipped rule: well-formed, and proven on a fixture where it fires and
one where it must not (the scenarios of tests/fixtures/scenarios.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.hostfs import HostFS
from tests.fixtures.scenarios import SCENARIOS, build_scenario
from tuner.facts import collect
from tuner.facts.catalog import FACTS
from tuner.facts.target import FactOptions, Target
from tuner.resources import rules_dir
from tuner.rules.engine import evaluate
from tuner.rules.lessons import LESSONS
from tuner.rules.loader import load_rules
from tuner.rules.model import FixtureRef, Rule, RuleBase
from tuner.tunables.observe import probe_with_settings
from tuner.tunables.registry import TUNABLES

BASE = load_rules(rules_dir())


@pytest.fixture(scope="module")
def targets_of(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Scenario name -> its targets, each scenario built and probed once."""
    cache: dict[str, tuple[dict[str, list[Target]], str]] = {}

    def get(name: str) -> tuple[dict[str, list[Target]], str]:
        if name not in cache:
            root = tmp_path_factory.mktemp(name)
            scenario = build_scenario(name, root)
            options = FactOptions(link_gbps=scenario.link_gbps, rtt_ms=scenario.rtt_ms)
            cache[name] = (collect(probe_with_settings(HostFS(root)), options), scenario.workload)
        return cache[name]

    return get


def _fired(base: RuleBase, rule: Rule, ref: FixtureRef, targets_of) -> list[str]:  # type: ignore[no-untyped-def]
    targets, default_workload = targets_of(ref.scenario)
    only = RuleBase(rules=(rule,), workloads=base.workloads)
    result = evaluate(only, targets, ref.workload or default_workload)
    return [f.target for f in result.findings]


def test_ids_are_unique() -> None:
    ids = [r.id for r in BASE.rules]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("rule", BASE.rules, ids=lambda r: r.id)
def test_rule_is_well_formed(rule: Rule) -> None:
    assert rule.lesson in LESSONS
    assert rule.sources
    assert rule.applies_to in FACTS
    assert all(s.key in TUNABLES for s in rule.settings)
    assert rule.fires is not None and rule.quiet is not None, "needs fixtures: fires and quiet"
    assert rule.fires.scenario in SCENARIOS and rule.quiet.scenario in SCENARIOS


@pytest.mark.parametrize("rule", BASE.rules, ids=lambda r: r.id)
def test_rule_fires_on_its_fixture_and_not_on_its_quiet_one(rule: Rule, targets_of) -> None:  # type: ignore[no-untyped-def]
    assert rule.fires is not None and rule.quiet is not None
    assert _fired(BASE, rule, rule.fires, targets_of), f"{rule.id} did not fire on {rule.fires}"
    assert not _fired(BASE, rule, rule.quiet, targets_of), f"{rule.id} fired on {rule.quiet}"


def test_no_warning_on_the_well_configured_host(targets_of) -> None:  # type: ignore[no-untyped-def]
    targets, workload = targets_of("well-configured")
    result = evaluate(BASE, targets, workload)
    assert [f.rule for f in result.findings if f.severity != "info"] == []


def test_fixture_hosts_are_small(tmp_path: Path) -> None:
    # A scenario is a whole host in a few thousand files; keep it that way so the suite stays fast.
    build_scenario("well-configured", tmp_path)
    assert sum(1 for _ in tmp_path.rglob("*")) < 5000
