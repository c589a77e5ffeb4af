"""Plans: merged from findings, written as YAML, read back equal, bad plans named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.errors import BadInput
from tuner.plan import plan_from_findings, read_plan, write_plan
from tuner.rules.model import Finding, Setting, Source

SOURCE = (Source("003_7920ff5510b23a75.txt", "Section 4", "blockdev --setra 16384"),)


def finding(rule: str, severity: str, *settings: Setting) -> Finding:
    return Finding(rule, rule, "readahead", severity, "sda", "e", "r", settings, SOURCE, ("all",))


def test_bounds_merge_to_the_tightest_and_ranges_go_to_search(tmp_path: Path) -> None:
    findings = (
        finding("a", "critical", Setting("block.read_ahead_kb", "sda", 4096, "at_least", 128)),
        finding("b", "warning", Setting("block.read_ahead_kb", "sda", 16384, "at_least", 128)),
        finding("c", "warning", Setting("block.nr_requests", "sda", None, "range", 4, (64, 1024))),
        finding("d", "info", Setting("block.scheduler", "sda", "none", "value", "none")),
    )
    plan = plan_from_findings(findings, "host1", "stream-read")
    assert [(e.key, e.value, e.reason) for e in plan.entries] == [
        ("block.read_ahead_kb", 16384, "b")
    ]
    assert [(s.key, s.low, s.high) for s in plan.search] == [("block.nr_requests", 64, 1024)]
    path = tmp_path / "plan.yaml"
    write_plan(plan, path)
    assert read_plan(path) == plan
    assert path.read_text().startswith("# iotuner plan")


def test_unknown_tunable_is_named(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    plan = plan_from_findings(
        (finding("a", "warning", Setting("block.read_ahead_kb", "sda", 4096, "at_least", 1)),),
        "h",
        None,
    )
    write_plan(plan, path)
    path.write_text(path.read_text().replace("block.read_ahead_kb", "block.readahead"))
    with pytest.raises(BadInput, match=r"entries\[0\]: unknown tunable 'block.readahead'"):
        read_plan(path)


@pytest.mark.parametrize("text", ["not: a plan", "plan_version: 9", "[unclosed"])
def test_not_a_plan(tmp_path: Path, text: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    with pytest.raises(BadInput, match="plan"):
        read_plan(path)


def test_malformed_yaml_names_the_file_and_line_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("plan_version: 1\nentries:\n  - key: a\n    value: [1, 2\nhost: x\n")
    with pytest.raises(BadInput) as err:
        read_plan(path)
    message = str(err.value)
    assert message.startswith(f"{path}:5: not valid YAML (expected ',' or ']'")
    assert "<unicode string>" not in message and "\n" not in message
