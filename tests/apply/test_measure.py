"""`apply --measure`'s measurement: real stream-read trials on the lab's single disk before and
after an apply; a better plan is kept, a failure after the apply rolls it back.

A plan that makes the workload clearly worse being rolled back is checked where users meet it,
on `iotuner apply --measure` (tests/commands/test_apply.py): exit 1, the measurement in the
JSON, the values and files as before, the apply journaled as rolled back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.loopdev import loop_device
from tuner.apply.measure import (
    MeasureConfig,
    compare,
    may_write,
    measured_apply,
    plan_target,
    plan_workload,
    trial_target,
)
from tuner.errors import BadInput
from tuner.lab.model import Lab
from tuner.lab.session import lab_session
from tuner.plan import Plan, PlanEntry
from tuner.rules.installed import load_rule_base
from tuner.trials.trial import TrialResult
from tuner.tunables.access import Tunables
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal

# Short trials: the disk is capped at 100 MB/s and 200 IOPS, so the differences measured here
# are about twofold and one second tells them apart.
CONFIG = MeasureConfig(repeats=3, runtime_s=1.0, ramp_s=0.0)
KEYS = ("block.read_ahead_kb", "block.max_sectors_kb")


def plan_of(
    *entries: PlanEntry, workload: str | None = "stream-read", target: str | None = None
) -> Plan:
    measured = {"target": target} if target is not None else None
    return Plan(1, "2026-11-22T00:00:00+00:00", "vm", "tune", workload, entries, measured=measured)


# -- without a lab ----------------------------------------------------------------------------


def test_compare_needs_the_whole_interval_below_one() -> None:
    ratio, (low, high), worse = compare([100.0, 101.0, 99.0], [50.0, 51.0, 49.0])
    assert worse and high < 1 and abs(ratio - 0.5) < 0.01 and low <= ratio <= high
    # A lower mean within the noise is not "worse".
    assert not compare([100.0, 90.0, 110.0], [98.0, 88.0, 108.0])[2]
    assert not compare([100.0, 101.0, 99.0], [190.0, 191.0, 189.0])[2]


def test_plan_target_and_workload(tmp_path: Path) -> None:
    assert plan_target(plan_of(target="/dev/loop7")) == "/dev/loop7"
    assert plan_target(plan_of(target="/dev/loop7"), "/data") == "/data"
    with pytest.raises(BadInput, match="records no trial target"):
        plan_target(plan_of())
    assert plan_workload(plan_of()).name == "stream-read"
    with pytest.raises(BadInput, match="names no workload"):
        plan_workload(plan_of(workload=None))
    with pytest.raises(BadInput, match="'my-job' is not in the rule base"):
        plan_workload(plan_of(workload="my-job"))
    with (
        pytest.raises(BadInput, match="not a block device"),
        trial_target(str(tmp_path / "nothing"), plan_workload(plan_of())),
    ):
        pass


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_destroy_data_names_the_only_device_written(tmp_path: Path) -> None:
    # The device a plan records is never written on the plan's say-so (issue 27).
    assert plan_target(plan_of(), None, "/dev/loop9") == "/dev/loop9"
    assert plan_target(plan_of(target="/dev/loop7"), None, "/dev/loop9") == "/dev/loop7"
    assert not may_write("/dev/loop7", None, "the plan's target")
    with pytest.raises(BadInput, match="--destroy-data /dev/null: not a block device"):
        may_write("/dev/null", "/dev/null", "--target")
    with loop_device() as name:
        device = f"/dev/{name}"
        assert may_write(device, device, "--target")
        with pytest.raises(
            BadInput, match=f"names another device than the plan's target {tmp_path}"
        ):
            may_write(str(tmp_path), device, "the plan's target")


def test_bad_input_before_anything_is_applied() -> None:
    applied: list[int] = []
    with pytest.raises(BadInput):
        measured_apply(plan_of(), None, lambda: applied.append(1), lambda: None, config=CONFIG)
    with pytest.raises(BadInput, match="at least two"):
        measured_apply(plan_of(target="/dev/null"), None, lambda: applied.append(1),
                       lambda: None, config=MeasureConfig(repeats=1))  # fmt: skip
    assert applied == []


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        (PlanEntry("net.ipv4.tcp_wmem", "host", [4096, 16384, 8388608]), "net.ipv4.tcp_wmem"),
        (PlanEntry("nic.ring_rx", "eth0", 4096), "nic.ring_rx on eth0"),
    ],
)
def test_a_plan_fio_cannot_measure_is_refused_before_anything(entry: PlanEntry, named: str) -> None:
    """A transfer tune's plan: a disk trial would call a worse window 'kept'."""
    applied: list[int] = []
    plan = plan_of(PlanEntry("block.read_ahead_kb", "loop0", 4096), entry,
                   workload="disk-to-network", target="/dev/null")  # fmt: skip
    with pytest.raises(BadInput, match=f"cannot see {named}.*apply without --measure"):
        measured_apply(plan, None, lambda: applied.append(1), lambda: None, config=CONFIG)
    assert applied == []


# -- on the lab's single disk (root) ------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if os.geteuid() != 0:
        pytest.skip("needs root (a lab disk, dropping caches)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IOTUNER_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        with lab_session("single-disk") as up:
            yield up


@pytest.fixture
def disk(lab: Lab) -> Iterator[tuple[str, str]]:
    """(device path, kernel name) of the lab disk; its queue settings put back after the test."""
    device = lab.disks[0].device
    name = device.removeprefix("/dev/")
    tunables = Tunables()
    found = {key: tunables.read(key, name) for key in KEYS}
    yield device, name
    for key, value in found.items():
        if tunables.read(key, name) != value:
            tunables.write(key, name, value)


def values(name: str) -> dict[str, object]:
    return {key: Tunables().read(key, name) for key in KEYS}


@pytest.mark.lab
def test_a_better_plan_is_kept(disk: tuple[str, str]) -> None:
    device, name = disk
    plan = plan_of(PlanEntry("block.read_ahead_kb", name, 4096), target=device)
    rolled: list[bool] = []
    seen: list[str] = []
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        done = measured_apply(
            plan, None, lambda: engine.apply({("block.read_ahead_kb", name): 4096}),
            lambda: rolled.append(True), config=CONFIG,
            on_trial=lambda phase, result: seen.append(phase),
        )  # fmt: skip
        assert Tunables().read("block.read_ahead_kb", name) == 4096, "kept in place"
    m = done.measurement
    assert not done.rolled_back and not m.worse and rolled == []
    assert seen == ["before"] * 3 + ["after"] * 3
    assert [a.key for a in done.applied] == ["block.read_ahead_kb"]
    # A few MB of readahead make the requests large enough for the disk's 100 MB/s.
    assert m.ratio > 1.3, m
    assert m.target == device and m.workload == "stream-read"
    assert len(m.baseline) == len(m.after) == 3


@pytest.mark.lab
def test_write_workloads_need_destroy_data_on_a_device(disk: tuple[str, str]) -> None:
    device, _ = disk
    write = load_rule_base().workload("stream-write")
    assert write is not None
    applied: list[int] = []
    with pytest.raises(BadInput, match="stream-write writes"):
        measured_apply(plan_of(target=device), None, lambda: applied.append(1), lambda: None,
                       config=CONFIG, workload=write)  # fmt: skip
    assert applied == []


@pytest.mark.lab
def test_a_failure_after_the_apply_rolls_it_back(disk: tuple[str, str]) -> None:
    device, name = disk
    plan = plan_of(PlanEntry("block.read_ahead_kb", name, 4096), target=device)
    before = values(name)

    def interrupt(phase: str, result: TrialResult) -> None:
        if phase == "after":
            raise KeyboardInterrupt  # Ctrl-C during the after-phase

    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        with pytest.raises(KeyboardInterrupt):
            measured_apply(plan, None, lambda: engine.apply({("block.read_ahead_kb", name): 4096}),
                           engine.restore, on_trial=interrupt,
                           config=MeasureConfig(repeats=2, runtime_s=1.0, ramp_s=0.0))  # fmt: skip
        assert values(name) == before
