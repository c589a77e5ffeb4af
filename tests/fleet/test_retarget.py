"""Retargeting a canary's plan to another host of its group: devices by position, nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tuner.errors import BadInput
from tuner.fleet.retarget import device_map, retarget
from tuner.plan import Plan, PlanEntry, SearchRange, parse_plan, plan_text, read_plan, write_plan

REPO = Path(__file__).resolve().parents[2]

CANARY_PLAN = Plan(
    plan_version=1,
    created="2026-11-22T07:10:00+00:00",
    host="canary",
    source="tune",
    workload="stream-read",
    entries=(
        PlanEntry("block.scheduler", "sdb", "mq-deadline", "none", "tune"),
        PlanEntry("block.read_ahead_kb", "/dev/sdc", 4096, 128, "tune"),
        PlanEntry("vm.dirty_background_bytes", "host", 268435456, 0, "dirty-background"),
        PlanEntry("nic.mtu", "eth0", 9000, 1500, "jumbo-frames"),
        PlanEntry("irq.affinity", "0000:01:00.0", "local-node", None, "irq-affinity"),
    ),
    search=(SearchRange("block.nr_requests", "sdb", 64, 1024, "shallow-queue"),),
    measured={"gain": 1.9},
)


def test_devices_map_by_position_and_the_rest_stays() -> None:
    plan = retarget(CANARY_PLAN, device_map(["sdb", "/dev/sdc"], ["sdd", "sde"]), host="node7")
    assert [(e.key, e.target) for e in plan.entries] == [
        ("block.scheduler", "sdd"),
        ("block.read_ahead_kb", "/dev/sde"),  # a /dev path stays a /dev path
        ("vm.dirty_background_bytes", "host"),
        ("nic.mtu", "eth0"),
        ("irq.affinity", "0000:01:00.0"),
    ]
    assert [e.value for e in plan.entries] == [e.value for e in CANARY_PLAN.entries]
    assert all(e.current is None for e in plan.entries)  # the canary's, not node7's
    assert plan.search[0].target == "sdd"
    assert (plan.host, plan.source, plan.measured) == ("node7", "tune", {"gain": 1.9})


def test_without_device_lists_names_are_kept() -> None:
    plan = retarget(CANARY_PLAN, None)
    assert [e.target for e in plan.entries] == [e.target for e in CANARY_PLAN.entries]
    assert plan.host == "canary"


def test_a_plan_device_the_canary_does_not_list_is_refused() -> None:
    with pytest.raises(BadInput) as err:
        retarget(CANARY_PLAN, device_map(["sdb"], ["sdd"]), where="fleet-plans/x.yaml")
    assert str(err.value) == (
        "fleet-plans/x.yaml: entries[1] (block.read_ahead_kb on /dev/sdc): sdc is not among "
        "the canary's iotuner_devices (sdb)"
    )


@pytest.mark.parametrize(
    ("source", "dest", "message"),
    [
        (["sdb", "sdc"], ["sdd"], "the canary lists 2 devices (sdb, sdc) and this host 1 (sdd)"),
        (["sdb"], [], "this host 0 (none)"),
        (["sdb", "/dev/sdb"], ["sdc", "sdd"], "the canary's iotuner_devices lists sdb more"),
        (["sdb", "sdc"], ["sdd", "sdd"], "this host's iotuner_devices lists sdd more than once"),
    ],
)
def test_device_lists_must_map_one_to_one(source: list[str], dest: list[str], message: str) -> None:
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        device_map(source, dest)


def test_the_text_round_trips_through_the_plan_reader(tmp_path: Path) -> None:
    plan = retarget(CANARY_PLAN, device_map(["sdb", "sdc"], ["sdd", "sde"]), host="node7")
    assert parse_plan(plan_text(plan), "x") == plan
    write_plan(plan, tmp_path / "p.yaml")
    assert read_plan(tmp_path / "p.yaml") == plan


def test_the_command_line(tmp_path: Path) -> None:
    source = tmp_path / "canary.yaml"
    write_plan(CANARY_PLAN, source)
    out = tmp_path / "node7.yaml"
    cmd = [sys.executable, "-m", "tuner.fleet.retarget", str(source)]
    ok = subprocess.run([*cmd, "--from", "sdb,sdc", "--to", "sdd,sde", "--host", "node7",
                         "--out", str(out)], capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert [e.target for e in read_plan(out).entries][:2] == ["sdd", "/dev/sde"]
    printed = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert parse_plan(printed.stdout, "stdout").entries == tuple(
        PlanEntry(e.key, e.target, e.value, None, e.reason) for e in CANARY_PLAN.entries
    )
    bad = subprocess.run([*cmd, "--from", "sdb", "--to", "sdd"], capture_output=True, text=True,
                         cwd=REPO)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"error: {source}: entries[1] (block.read_ahead_kb on /dev/sdc): sdc is not among the "
        "canary's iotuner_devices (sdb)"
    )
