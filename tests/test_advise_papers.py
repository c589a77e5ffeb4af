"""The papers' situations, black-box through `iotuner advise --json`.

Each situation of issue 3 (item 5) is a fixture host (tests/fixtures/scenarios.py); advise must
report the paper's lesson on the right device, with the probed numbers in the evidence, and
must raise no warning on the well-configured host under any workload the scenarios use.
Evidence may print a size raw or for people ("65536", "64 KiB"): both are accepted.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.scenarios import SCENARIOS, build_scenario
from tuner.units import human_bytes

REPO = Path(__file__).resolve().parents[1]
HDDS = ("sda", "sdb", "sdc", "sdd")
FINDING_KEYS = {"rule", "lesson", "severity", "target", "evidence", "recommendation", "settings",
                "sources"}  # fmt: skip
Finding = dict[str, Any]
Advise = Callable[..., list[Finding]]


@pytest.fixture(scope="module")
def advise(tmp_path_factory: pytest.TempPathFactory) -> Advise:
    """advise(name, workload=..., link_gbps=..., rtt_ms=...) -> findings; the scenario's own
    workload and network options unless given."""
    base = tmp_path_factory.mktemp("papers")
    built: set[str] = set()

    def run(name: str, **options: Any) -> list[Finding]:
        scenario = SCENARIOS[name]
        root = base / name
        if name not in built:
            build_scenario(name, root)
            built.add(name)
        workload = options.get("workload", scenario.workload)
        link = options.get("link_gbps", scenario.link_gbps)
        rtt = options.get("rtt_ms", scenario.rtt_ms)
        cmd = [sys.executable, "-m", "tuner.cli", "advise", "--root", str(root),
               "--workload", workload, "--json"]  # fmt: skip
        if link is not None and rtt is not None:
            cmd += ["--link-gbps", str(link), "--rtt-ms", str(rtt)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
        # Exit 1 means "findings"; only 2 (bad input) and crashes are failures here.
        assert proc.returncode in (0, 1), (
            f"{' '.join(cmd[2:])} exited {proc.returncode}:\n" + (proc.stderr[-2000:])
        )
        findings: list[Finding] = json.loads(proc.stdout)["findings"]
        for finding in findings:
            assert finding.keys() >= FINDING_KEYS, f"finding lacks fields: {finding}"
            assert finding["sources"], f"{finding['rule']} cites no source"
            for setting in finding["settings"]:
                assert {"key", "target", "value"} <= setting.keys()
        return findings

    return run


def _summary(findings: list[Finding]) -> str:
    return "\n".join(
        f"  {f['severity']} {f['lesson']} {f['rule']} on {f['target']}: {f['evidence']}"
        for f in findings
    )


def fired(
    findings: list[Finding], lessons: str | Collection[str], targets: Collection[str]
) -> list[Finding]:
    """The findings of `lessons` on `targets`, asserting there is at least one."""
    wanted = {lessons} if isinstance(lessons, str) else set(lessons)
    hits = [f for f in findings if f["lesson"] in wanted and f["target"] in targets]
    assert hits, f"no {sorted(wanted)} finding on {sorted(targets)}; found:\n{_summary(findings)}"
    return hits


def says(finding: Finding, *forms: str) -> None:
    """The evidence shows a number in at least one of `forms`."""
    evidence = finding["evidence"]
    assert any(form in evidence for form in forms), f"{forms} not in evidence: {evidence!r}"


def sizes(n: int) -> tuple[str, ...]:
    """The ways evidence may print a byte count: raw, grouped, binary or decimal units."""
    forms = [str(n), f"{n:,}", human_bytes(n)]
    for unit, size in (("K", 1024), ("M", 1024**2), ("G", 1024**3)):
        if n % size == 0:
            forms += [f"{n // size} {unit}iB", f"{n // size} {unit}B", f"{n // size}{unit}"]
    for unit, size in (("MB", 10**6), ("GB", 10**9)):
        if n % size == 0:
            forms.append(f"{n // size} {unit}")
    return tuple(forms)


def serious(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f["severity"] in ("warning", "critical")]


# -- one test per paper situation -------------------------------------------------------------


def test_hba_trained_x4_gen2_in_x8_gen3_slot(advise: Advise) -> None:
    (finding,) = fired(advise("hba-downtrained"), "slot-placement", {"0000:01:00.0"})
    says(finding, "x4")
    says(finding, "5.0", "5 GT/s")
    says(finding, "2000", "2.0 GB/s")  # usable MB/s as trained, of 7877 at x8 8 GT/s
    says(finding, "x8")
    assert finding["severity"] == "critical"  # below half its capability


def test_nic_and_hba_behind_one_switch(advise: Advise) -> None:
    hits = fired(
        advise("nic-hba-one-switch"),
        "nic-storage-shared-path",
        {"0000:01:00.0", "0000:00:01.0"},  # the switch's upstream port, or the root port above
    )
    says(hits[0], "eth0", "0000:04:00.0")
    says(hits[0], "0000:03:00.0")


def test_sixteen_hdds_behind_one_wide_port(advise: Advise) -> None:
    (finding,) = fired(advise("sixteen-hdd-one-wide-port"), "bus-saturation", {"port-0:0"})
    says(finding, "16")
    says(finding, "2400", "2.4 GB/s")  # 4 lanes x 6 Gb/s
    assert finding["severity"] in ("warning", "critical")


def test_md_raid5_under_stream_write(advise: Advise) -> None:
    (finding,) = fired(advise("md-raid5"), "raid5-write", {"md0"})
    says(finding, "raid5")
    assert finding["severity"] in ("warning", "critical")
    # The lesson is about writes: the same array read as a stream is no warning.
    quiet = advise("md-raid5", workload="stream-read")
    assert not [f for f in serious(quiet) if f["lesson"] == "raid5-write"]


def test_raid_controller_vectors_all_on_cpu0(advise: Advise) -> None:
    (finding,) = fired(advise("raid-irqs-cpu0"), "irq-affinity", {"0000:01:00.0"})
    says(finding, "8")
    assert re.search(r"\bCPUs? ?0\b(?!-)", finding["evidence"], re.IGNORECASE), finding["evidence"]


def test_hba_on_node1_with_irqs_on_node0(advise: Advise) -> None:
    hits = fired(
        advise("hba-node1-irqs-node0"), {"numa-locality", "irq-affinity"}, {"0000:83:00.0"}
    )
    says(hits[0], "8")
    says(hits[0], "0-7", "node 0")


def test_partition_misaligned_to_md_chunk(advise: Advise) -> None:
    parts = {f"{name}1" for name in HDDS}
    hits = fired(advise("partition-misaligned"), "stripe-alignment", parts)
    assert {f["target"] for f in hits} == parts  # every member partition starts off a chunk
    for finding in hits:
        says(finding, *sizes(64 * 1024), *sizes(1024 * 1024 + 64 * 1024))
        says(finding, *sizes(512 * 1024))


def test_readahead_128k_on_stream_read_box(advise: Advise) -> None:
    hits = fired(advise("readahead-128k"), "readahead", {*HDDS, "md0"})
    for finding in hits:
        says(finding, "128")
    settings = [s for f in hits for s in f["settings"] if s["key"] == "block.read_ahead_kb"]
    assert settings and all(s["value"] > 128 for s in settings)


def test_mq_deadline_on_nvme(advise: Advise) -> None:
    (finding,) = fired(advise("nvme-mq-deadline"), "io-scheduler", {"nvme0n1"})
    says(finding, "mq-deadline")


def test_mixed_hdd_models_in_one_array(advise: Advise) -> None:
    (finding,) = fired(advise("mixed-hdd-array"), "mixed-devices", {"md0"})
    says(finding, "ST8000NM0075")
    says(finding, "HUH728080AL5200")


def test_10g_nic_mtu1500_and_4mb_buffers_on_100ms_path(advise: Advise) -> None:
    name = "nic-10g-mtu1500-small-buffers"
    findings = advise(name)
    (jumbo,) = fired(findings, "jumbo-frames", {"eth0"})
    says(jumbo, "1500")
    buffers = fired(findings, "tcp-buffers", {name, "host"})  # the host's name, or "host"
    for finding in buffers:
        says(finding, *sizes(4 * 1024**2))
        says(finding, *sizes(125_000_000))  # 10 Gb/s x 100 ms
    assert all(f["severity"] in ("warning", "critical") for f in buffers)


# -- and the host that does everything right ------------------------------------------------

# Every workload (with its network options) that some scenario is advised under: the baseline
# must stay quiet under each, or a scenario's finding could come from the baseline.
RUNS = sorted({(s.workload, s.link_gbps, s.rtt_ms) for s in SCENARIOS.values()}, key=str)


@pytest.mark.parametrize(("workload", "link_gbps", "rtt_ms"), RUNS, ids=lambda v: str(v))
def test_well_configured_host_raises_no_warning(
    advise: Advise, workload: str, link_gbps: float | None, rtt_ms: float | None
) -> None:
    findings = advise("well-configured", workload=workload, link_gbps=link_gbps, rtt_ms=rtt_ms)
    assert not serious(findings), f"on the well-configured host:\n{_summary(serious(findings))}"
