"""The rules on a NIC's PCIe link, side by side: one finding per downtrained NIC, critical only
when the link carries less than its ports, and never "move it" for a NIC built into the board."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tuner.facts import FactOptions, collect
from tuner.resources import rules_dir
from tuner.rules.engine import evaluate
from tuner.rules.loader import load_rules
from tuner.rules.model import RuleBase

BASE = load_rules(rules_dir())
NIC_RULES = ("nic-link-below-half", "nic-link-downtrained", "nic-onboard-link-short",
             "nic-onboard-link-downtrained")  # fmt: skip
NIC = "0000:82:00.0"


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("well-configured", []),
        # x2 5 GT/s = 1000 MB/s under a 10 Gb/s port's 1250: the slot caps the network.
        ("nic-downtrained", [("nic-link-below-half", "critical")]),
        # x4 5 GT/s = 2000 MB/s, a quarter of the link but more than the port carries.
        ("nic-downtrained-ports-fit", [("nic-link-downtrained", "warning")]),
        ("nic-downtrained-gen2", [("nic-link-downtrained", "warning")]),
        ("nic-onboard-link-short", [("nic-onboard-link-short", "warning")]),
        ("nic-onboard-downtrained", [("nic-onboard-link-downtrained", "info")]),
    ],
)
def test_one_finding_per_downtrained_nic_with_the_severity_its_evidence_bears(
    tmp_path: Path, scenario: str, expected: list[tuple[str, str]]
) -> None:
    built = build_scenario(scenario, tmp_path)
    targets = collect(probe_host(HostFS(tmp_path)), FactOptions())
    only = RuleBase(rules=tuple(BASE.rule(r) for r in NIC_RULES), workloads=BASE.workloads)  # type: ignore[misc]
    findings = [f for f in evaluate(only, targets, built.workload).findings if f.target == NIC]
    assert [(f.rule, f.severity) for f in findings] == expected
    for finding in findings:
        if "onboard" in finding.rule:
            assert "'Embedded NIC 1'" in finding.evidence
            assert "cannot" in finding.recommendation and "Move" not in finding.recommendation
        else:
            assert finding.recommendation.startswith("Move 0000:82:00.0 to a slot")
