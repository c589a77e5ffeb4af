"""`iotuner advise` as users run it: real dumps, the live host, and every kind of bad input."""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

import pytest
import yaml

from tests.cli import iotuner
from tests.conftest import HWLOC_DUMPS
from tuner.resources import rules_dir


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_advise_runs_cleanly_on_every_hwloc_dump(hwloc_root, dump: str) -> None:  # type: ignore[no-untyped-def]
    for workload in ("stream-read", "disk-to-network"):
        result = iotuner(
            "advise", "--root", str(hwloc_root(dump)), "--workload", workload, "--json"
        )
        assert result.returncode in (0, 1), result.stderr
        assert "Traceback" not in result.stderr
        doc = json.loads(result.stdout)
        for finding in doc["findings"]:
            assert finding["evidence"] and finding["sources"], finding
            assert "{" not in finding["evidence"], finding["evidence"]


@pytest.mark.parametrize("workload", ["stream-read", "disk-to-network"])
def test_an_onboard_nic_whose_link_carries_its_ports_is_no_critical_finding(
    hwloc_root, workload: str
) -> None:  # type: ignore[no-untyped-def]
    # hwloc's 32intel64 capture: the X722 built into the board (SMBIOS lists it on board)
    # trained x1 2.5 GT/s of 8 GT/s, 250 MB/s for the 125 MB/s of its 1 Gb/s port.
    root = hwloc_root("32intel64-2p8co2t+8ve")
    result = iotuner("advise", "--root", str(root), "--workload", workload, "--json")
    findings = json.loads(result.stdout)["findings"]
    x722 = [f for f in findings if f["target"] in ("0000:60:00.0", "0000:60:00.1")]
    assert {(f["target"], f["rule"], f["severity"]) for f in x722} == {
        ("0000:60:00.0", "nic-onboard-link-downtrained", "info"),
        ("0000:60:00.1", "nic-onboard-link-downtrained", "info"),
    }
    for finding in x722:
        assert "250 MB/s" in finding["evidence"] and "125 MB/s" in finding["evidence"]
        assert "on-board device 0 'Intel Ethernet X772'" in finding["evidence"]
        assert "cannot change slots" in finding["recommendation"]
        assert "Move" not in finding["recommendation"]
    assert not [f for f in findings if f["severity"] == "critical"]
    assert result.returncode == 0


def test_explain_lists_every_rule_with_its_outcome(hwloc_root) -> None:  # type: ignore[no-untyped-def]
    root = hwloc_root("32em64t-2n8c+dax+nvme+mic+dimms")
    doc = json.loads(iotuner("advise", "--root", str(root), "--explain", "--json").stdout)
    outcomes = {e["rule"]: e["status"] for e in doc["explanations"]}
    assert len(outcomes) >= 24
    # No --link-gbps/--rtt-ms: socket-buffer rules cannot know the bandwidth-delay product.
    doc = json.loads(
        iotuner(
            "advise", "--root", str(root), "--workload", "disk-to-network", "--explain", "--json"
        ).stdout
    )
    tcp = next(e for e in doc["explanations"] if e["rule"] == "tcp-rmem-below-bdp")
    assert tcp["status"] == "facts unknown" and "bdp_bytes" in tcp["detail"]


def test_plan_out_writes_a_plan_of_the_findings(hwloc_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.yaml"
    root = hwloc_root("32em64t-2n8c+dax+nvme+mic+dimms")
    result = iotuner("advise", "--root", str(root), "--plan-out", str(plan))
    assert result.returncode in (0, 1), result.stderr
    doc = yaml.safe_load(plan.read_text())
    assert doc["plan_version"] == 1 and doc["workload"] == "stream-read"
    assert all(entry["key"] and entry["target"] for entry in doc["entries"])


@pytest.mark.live
@pytest.mark.whole_host  # its block devices read twice: another test's loop device between
def test_live_advise_claims_nothing_about_absent_hardware() -> None:
    result = iotuner("advise", "--json", "--explain")
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    real = (
        {p.name for p in Path("/sys/bus/pci/devices").iterdir()}
        | set(p.name for p in Path("/sys/class/block").iterdir())
        | {p.name for p in Path("/sys/class/net").iterdir()}
    )
    for finding in doc["findings"]:
        target = finding["target"]
        assert target in real or target in ("host", "vm") or target.startswith("/"), target


def test_unknown_workload_is_bad_input() -> None:
    result = iotuner("advise", "--workload", "streaming", "--root", "/nonexistent")
    assert result.returncode == 2
    assert "unknown workload" in result.stderr and "stream-read" in result.stderr


def test_broken_rule_file_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(rules_dir(), rules)
    text = (rules / "queues.yaml").read_text()
    (rules / "queues.yaml").write_text(text.replace("lesson: readahead", "lesson: read-ahead", 1))
    result = iotuner("advise", "--rules", str(rules), "--root", "/nonexistent")
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "queues.yaml:" in line and "unknown lesson 'read-ahead'" in line


def test_rules_list_and_show() -> None:
    listed = json.loads(iotuner("rules", "list", "--json").stdout)
    assert len(listed) >= 24
    shown = iotuner("rules", "show", listed[0]["id"])
    assert shown.returncode == 0 and listed[0]["id"] in shown.stdout
    missing = iotuner("rules", "show", "no-such-rule")
    assert missing.returncode == 2 and "no rule 'no-such-rule'" in missing.stderr


# -- arguments are input too (issue 17): one line, exit 2, no traceback -----------------------


def one_line_exit_2(result: object) -> str:
    stderr = str(result.stderr)  # type: ignore[attr-defined]
    assert result.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    return stderr


def test_plan_out_naming_a_directory_is_bad_input(hwloc_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = hwloc_root("2pa-pcidomain32bits")
    where = tmp_path / "plans"
    where.mkdir()
    said = one_line_exit_2(iotuner("advise", "--root", str(root), "--plan-out", str(where)))
    assert f"--plan-out {where}: is a directory" in said
    assert list(where.iterdir()) == [] and list(tmp_path.iterdir()) == [where]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--link-gbps", "inf", "--rtt-ms", "10"), "--link-gbps inf: expected a number from"),
        (("--link-gbps", "nan", "--rtt-ms", "10"), "--link-gbps nan: expected a number from"),
        (("--link-gbps", "10", "--rtt-ms", "1e308"), "--rtt-ms 1e308: expected a number from"),
        (("--root", ""), "--root: an empty path"),
        (("--plan-out", ""), "--plan-out: an empty path"),
        (("--peer", "-c"), "--peer '-c': expected HOST[:PORT]"),
        (("--peer", "dtn1:80"), "PORT 1024-65535"),
        (("--peer", "dtn1", "--rtt-ms", "10"), "give it or --link-gbps and --rtt-ms, not both"),
        (("--peer", "dtn1", "--root", "/tmp"), "--peer measures from this host"),
    ],
)
def test_impossible_arguments_are_bad_input(args: tuple[str, ...], why: str) -> None:
    assert why in one_line_exit_2(iotuner("advise", *args))


def test_a_peer_not_listening_is_one_line_and_exit_1() -> None:
    """Nothing listens on the port (it was free a moment ago): iperf3 is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = iotuner("advise", "--workload", "disk-to-network", "--peer", f"127.0.0.1:{port}")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "iperf3: unable to connect to server" in lines[0]
    assert result.stdout == ""  # no findings from a path it could not measure
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    "where",
    ["root", "plan-out-file", "plan-out-dir"],
)
def test_a_path_component_over_255_bytes_is_one_line(  # type: ignore[no-untyped-def]
    hwloc_root, tmp_path: Path, where: str
) -> None:
    long = tmp_path / ("a" * 300)
    root = str(long) if where == "root" else str(hwloc_root("2pa-pcidomain32bits"))
    args = ["advise", "--root", root]
    if where == "plan-out-file":
        args += ["--plan-out", f"{long}.yaml"]
    elif where == "plan-out-dir":
        args += ["--plan-out", f"{long}/plan.yaml"]
    said = one_line_exit_2(iotuner(*args))
    assert "File name too long" in said
    assert list(tmp_path.iterdir()) == []


def test_a_root_with_no_disks_says_so_first_and_never_no_findings(tmp_path: Path) -> None:
    """A `sys/` tree with nothing in it (a capture of the wrong thing) ran almost no rule: the
    first line says so, nothing reads as an all-clear, and --exit-code fails it."""
    (tmp_path / "sys").mkdir()
    result = iotuner("advise", "--root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    first = (result.stderr + result.stdout).splitlines()[0]
    assert "could run" in first and "no disk" in first, first
    assert "No findings" not in result.stdout + result.stderr
    assert iotuner("advise", "--root", str(tmp_path), "--exit-code").returncode == 1
    document = json.loads(iotuner("advise", "--root", str(tmp_path), "--json").stdout)
    assert document["inconclusive"]["ran"] < document["inconclusive"]["concerned"] / 2


def test_the_live_host_runs_most_rules_and_is_not_called_inconclusive() -> None:
    """The warning is for a root that is not a host, not for this VM: it must not cry wolf."""
    result = iotuner("advise")
    assert result.returncode == 0, result.stderr
    assert "could run" not in result.stdout + result.stderr
    assert json.loads(iotuner("advise", "--json").stdout)["inconclusive"] is None


def test_a_plan_entry_for_a_disk_with_nothing_stable_is_warned_and_names_match_by(
    tmp_path: Path,
) -> None:
    """The fixture's md0 has no WWN, serial, by-path or backing file: advise warns when it
    writes its entry (apply would refuse it) and names --match-by name, which marks it."""
    from tests.fixtures.scenarios import build_scenario

    root, plan = tmp_path / "host", tmp_path / "plan.yaml"
    build_scenario("readahead-128k", root)
    plain = iotuner("advise", "--root", str(root), "--plan-out", str(plan))
    assert plain.returncode == 0, plain.stderr
    assert "md0 has no WWN, serial, by-path or loop backing file" in plain.stderr, plain.stderr
    assert "--match-by name" in plain.stderr and "unstable across reboots" in plain.stderr
    entries = yaml.safe_load(plan.read_text())["entries"]
    assert [e for e in entries if e["target"] == "md0"] and not any("match" in e for e in entries)

    named = iotuner("advise", "--root", str(root), "--plan-out", str(plan), "--match-by", "name")
    assert named.returncode == 0, named.stderr
    assert "match it by kernel name (--match-by name)" in named.stderr, named.stderr
    marked = {e["target"]: e.get("match") for e in yaml.safe_load(plan.read_text())["entries"]}
    assert marked["md0"] == "name", marked
    assert iotuner("advise", "--match-by", "serial").returncode == 2
