"""The engine: findings with filled evidence, bounds that never lower, explanations."""

from __future__ import annotations

from pathlib import Path

from tests.rules.rule_files import rule_dir
from tuner.facts.target import Target
from tuner.rules.engine import evaluate
from tuner.rules.loader import load_rules


def disk(name: str, **facts: object) -> Target:
    return Target("disk", name, {"name": name, "is_physical": True, **facts})


def test_fires_with_evidence_and_a_bound(tmp_path: Path) -> None:
    base = load_rules(rule_dir(tmp_path))
    result = evaluate(base, {"disk": [disk("sda", read_ahead_kb=128)]}, "stream-read")
    (finding,) = result.findings
    assert finding.target == "sda"
    assert finding.evidence == "sda reads ahead 128 KB"
    (setting,) = finding.settings
    assert (setting.key, setting.target, setting.value, setting.current) == (
        "block.read_ahead_kb", "sda", 4096, 128,
    )  # fmt: skip
    assert result.explanations[0].status == "fired"


def test_other_workload_and_unknown_facts_are_explained(tmp_path: Path) -> None:
    base = load_rules(rule_dir(tmp_path))
    other = evaluate(base, {"disk": [disk("sda", read_ahead_kb=128)]}, "random-read")
    assert other.findings == ()
    assert other.explanations[0].status == "other workload"
    unknown = evaluate(base, {"disk": [disk("sda", read_ahead_kb=None)]}, None)
    assert unknown.findings == ()
    assert unknown.explanations[0].status == "facts unknown"
    assert "sda: read_ahead_kb" in unknown.explanations[0].detail
    quiet = evaluate(base, {"disk": [disk("sda", read_ahead_kb=8192)]}, None)
    assert quiet.explanations[0].status == "condition false"
    none = evaluate(base, {}, None)
    assert none.explanations[0].status == "no targets"
