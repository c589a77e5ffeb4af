"""`iotuner apply` as users run it: a subprocess, real ansible-playbook, lab loop devices.

Each test has its own loop device, configuration root and state directory: all but the
measuring one run beside other tests (lab_parallel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apply.applylab import (
    APPLIED,
    block_entries,
    queue,
    refused,
    sysctl_entry,
    tree,
    write_plan,
)
from tests.cli import iotuner
from tests.loopdev import loop_device
from tests.test_plan import PLAN_HEAD
from tests.yaml_bombs import sized_bomb
from tuner.apply.render import SYSCTL_CONF, UDEV_RULES

# Bytes no text round trip would keep: no final newline, a tab, a byte that is not UTF-8.
ADMIN_SYSCTL = b"# the admin's own\nvm.swappiness\t= 1\n\xff"


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_apply_shows_each_change_then_nothing_to_do_and_rollback_restores_all(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    # An admin's own file where iotuner's goes: rollback brings it back byte for byte.
    sysctl = conf / SYSCTL_CONF
    sysctl.parent.mkdir(parents=True)
    sysctl.write_bytes(ADMIN_SYSCTL)
    os.chmod(sysctl, 0o600)
    files, original = tree(conf), queue(dev)
    plan = write_plan(tmp_path / "plan.yaml", [*block_entries(dev), sysctl_entry()])
    before = iotuner("verify", str(plan), "--conf-root", str(conf), "--json", state=state)
    assert before.returncode == 1, before.stderr
    failed = {c["id"] for c in json.loads(before.stdout)["checks"] if not c["passed"]}
    assert f"block.read_ahead_kb@{dev}" in failed and str(conf / UDEV_RULES) in failed

    first = iotuner("apply", str(plan), "--conf-root", str(conf), state=state)
    assert first.returncode == 0, first.stderr
    assert "block.read_ahead_kb" in first.stdout and "changed" in first.stdout
    assert "applied as change set 1: `iotuner rollback` undoes it" in first.stdout
    assert queue(dev) == APPLIED and tree(conf) != files
    after = iotuner("verify", str(plan), "--conf-root", str(conf), state=state)
    assert after.returncode == 0, after.stdout + after.stderr

    second = iotuner("apply", str(plan), "--conf-root", str(conf), "--json", state=state)
    assert second.returncode == 0, second.stderr
    doc = json.loads(second.stdout)
    assert doc["status"] == "unchanged" and doc["error"] is None
    assert doc["recap"][0]["changed"] == 0
    assert {r["status"] for r in doc["rows"]} == {"ok"}
    (readahead,) = [r for r in doc["rows"] if r["name"] == "block.read_ahead_kb"]
    assert readahead == {"kind": "value", "name": "block.read_ahead_kb", "target": dev,
                         "before": "4092", "after": "4092", "status": "ok"}  # fmt: skip

    # history names each value apply 1 set, old and new, in text and JSON.
    was = int(original["read_ahead_kb"])
    listed = iotuner("history", state=state).stdout
    assert f"set block.read_ahead_kb on {dev}: {was} -> 4093" in listed, listed
    (first_apply,) = [a for a in json.loads(iotuner("history", "--json", state=state).stdout)
                      ["applies"] if a["id"] == 1]  # fmt: skip
    assert {"key": "block.read_ahead_kb", "target": dev, "old": was, "new": 4093} in first_apply[
        "values"
    ]
    # rollback --check says what it would put back and writes nothing: not a byte of the
    # configuration root, not a queue setting.
    applied_files = tree(conf)
    check = iotuner("rollback", "--check", state=state)
    assert check.returncode == 0, check.stderr
    assert "would roll back apply 1:" in check.stdout, check.stdout
    assert f"block.read_ahead_kb on {dev}: 4093 -> {was}" in check.stdout, check.stdout
    assert f"restore {sysctl}" in check.stdout, check.stdout
    assert tree(conf) == applied_files and queue(dev) == APPLIED

    # Rollback undoes the apply that changed something (the second changed nothing).
    undone = iotuner("rollback", state=state)
    assert undone.returncode == 0, undone.stderr
    assert "rolled back apply 1" in undone.stdout
    assert tree(conf) == files
    assert sysctl.read_bytes() == ADMIN_SYSCTL and sysctl.stat().st_mode & 0o777 == 0o600
    assert queue(dev) == original


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_check_and_diff_show_what_would_change_and_change_nothing(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path / "plan.yaml", block_entries(dev))
    before = queue(dev)
    result = iotuner("apply", str(plan), "--conf-root", str(conf), "--check", "--diff",
                     state=state)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "would change" in result.stdout
    assert f"--- block.read_ahead_kb on {dev}\n" in result.stdout
    assert f"-{before['read_ahead_kb']}\n+4092\n" in result.stdout
    assert '+ACTION=="add|change", SUBSYSTEM=="block"' in result.stdout
    # The directory the rules would go in is missing here: check mode says it would make it
    # (the diff's header is the directory's path, which the console wraps where it likes).
    unwrapped = "".join(result.stdout.split())
    assert f"---{(conf / UDEV_RULES).parent}-absent+directory" in unwrapped
    assert "nothing was written" in result.stdout
    assert queue(dev) == before and tree(conf) == {}
    assert not (state / "state.db").exists(), "nothing journaled"


@pytest.mark.lab
@pytest.mark.lab_parallel
@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"key": "block.readahead", "target": "{dev}", "value": 4096}, "unknown tunable"),
        ({"key": "block.read_ahead_kb", "target": "sdz", "value": 4096}, "sdz"),
        ({"key": "block.scheduler", "target": "{dev}", "value": "cfq"}, "'cfq' is not available"),
    ],
    ids=["unknown-tunable", "missing-device", "refused-value"],
)
def test_bad_plans_exit_2_naming_the_entry_and_change_nothing(
    entry: dict[str, object], why: str, dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    entry = {**entry, "target": str(entry["target"]).format(dev=dev)}
    plan = write_plan(tmp_path / "plan.yaml", [block_entries(dev)[1], entry])
    before = queue(dev)
    result = iotuner("apply", str(plan), "--conf-root", str(conf), state=state)
    assert result.returncode == 2, result.stderr
    assert f"{plan}: entries[1]" in result.stderr and why in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert queue(dev) == before and tree(conf) == {}
    # Refused before Ansible started: it made nothing, not even its temporary directory.
    assert not (state / "ansible").exists()


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_a_failed_task_exits_1_and_leaves_the_host_as_before(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    # /etc/sysctl.d read-only: the udev rules file is written first, then the sysctl file
    # fails, and the live values are never reached.
    sysctl_d = (conf / SYSCTL_CONF).parent
    sysctl_d.mkdir(parents=True)
    files, before = tree(conf), queue(dev)
    plan = write_plan(tmp_path / "plan.yaml", [*block_entries(dev), sysctl_entry()])
    with refused(sysctl_d):
        result = iotuner("apply", str(plan), "--conf-root", str(conf), "--json", state=state)
    assert result.returncode == 1
    assert f"Destination {sysctl_d} not writable" in result.stderr
    assert "everything put back as it was" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "rolled back"
    statuses = {r["name"]: r["status"] for r in doc["rows"]}
    assert statuses[str(conf / UDEV_RULES)] == "undone"
    assert statuses[str(conf / SYSCTL_CONF)] == "failed"
    assert statuses["block.read_ahead_kb"] == "not reached"
    assert tree(conf) == files and queue(dev) == before


def test_missing_ansible_playbook_is_one_line_and_exit_1(tmp_path: Path, state: Path) -> None:
    plan = write_plan(tmp_path / "plan.yaml", [sysctl_entry()])
    env = {**os.environ, "IOTUNER_STATE_DIR": str(state),
           "IOTUNER_ANSIBLE_PLAYBOOK": str(tmp_path / "no" / "ansible-playbook")}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "apply", str(plan), "--check",
         "--conf-root", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "ansible-playbook" in result.stderr


@pytest.mark.lab
def test_measure_rolls_back_an_apply_that_made_the_workload_worse(
    state: Path, conf: Path, tmp_path: Path
) -> None:
    """16 KiB requests and no readahead on the lab's 200-IOPS disk: stream-read falls from
    about 50 MB/s to about 3; apply measures that and puts everything back by itself."""
    from tuner.lab.session import lab_session

    with lab_session("single-disk") as lab:
        device = lab.disks[0].device
        name = device.removeprefix("/dev/")
        max_sectors = Path(f"/sys/block/{name}/queue/max_sectors_kb")
        before = queue(name), max_sectors.read_text()
        plan = write_plan(tmp_path / "worse.yaml", [
            {"key": "block.read_ahead_kb", "target": name, "value": 4},
            {"key": "block.max_sectors_kb", "target": name, "value": 4},
        ])  # fmt: skip
        result = iotuner("apply", str(plan), "--measure", "--target", device, "--repeats", "2",
                         "--runtime", "1", "--ramp", "0", "--conf-root", str(conf), "--json",
                         state=state)  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "stream-read got worse" in result.stderr and "rolled back" in result.stderr
        measured = json.loads(result.stdout)["measure"]
        assert measured["rolled_back"] and measured["worse"] and measured["ci"][1] < 1.0
        assert measured["target"] == device and measured["workload"] == "stream-read"
        assert len(measured["baseline"]["samples"]) == len(measured["after"]["samples"]) == 2
        assert measured["after"]["mbps"] < 0.3 * measured["baseline"]["mbps"]
        assert (queue(name), max_sectors.read_text()) == before
        assert not (conf / UDEV_RULES).exists()
        history = json.loads(iotuner("history", "--json", state=state).stdout)
        assert [a["status"] for a in history["applies"]] == ["rolled-back"]


@pytest.mark.parametrize("size", [2_000, 38_000])
def test_apply_check_refuses_a_plan_of_yaml_aliases_in_one_line(tmp_path: Path, size: int) -> None:
    # 2 KB of aliases took 23 s to check; 38 KB never finished (issue 27).
    head = PLAN_HEAD + "measured:\n"
    plan = tmp_path / "plan.yaml"
    plan.write_text(head + sized_bomb(size - len(head), indent="  "))
    run = iotuner("apply", str(plan), "--check", timeout=20)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "refused (more than" in run.stderr


def test_apply_check_refuses_deep_nesting_in_one_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN_HEAD + "measured: " + "[" * 10_000 + "]" * 10_000 + "\n")
    run = iotuner("apply", str(plan), "--check", timeout=20)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "nested deeper than" in run.stderr


@pytest.mark.parametrize("measured", ["[a, b]", "'/dev/sda'"])
def test_apply_measure_refuses_a_plan_whose_measured_is_not_a_mapping(
    tmp_path: Path, measured: str
) -> None:
    # It passed --check and crashed --measure with a traceback (issue 27). No entries: nothing
    # could be applied even if the refusal came late.
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN_HEAD.replace("workload: null", "workload: stream-read")
                    + f"measured: {measured}\n")  # fmt: skip
    conf = tmp_path / "conf"
    conf.mkdir()
    for extra in (["--measure"], ["--check"]):
        run = iotuner("apply", str(plan), "--conf-root", str(conf), *extra,
                      state=tmp_path / "state", timeout=60)  # fmt: skip
        assert run.returncode == 2, run.stdout + run.stderr
        assert run.stderr.count("\n") == 1 and "measured: expected a mapping" in run.stderr
    assert not any(conf.iterdir())


# -- apply --measure --destroy-data DEVICE (issue 27) -----------------------------------------

MARK = b"the user's data\n" * 4096  # 64 KiB at the start of the device, compared after


def _write_plan_on(path: Path, device: str) -> Path:
    """A stream-write plan with no entries whose tune measured on `device`."""
    path.write_text(PLAN_HEAD.replace("workload: null", "workload: stream-write")
                    + f"measured: {{target: {device}}}\n")  # fmt: skip
    return path


def _marked(name: str) -> str:
    device = f"/dev/{name}"
    with open(device, "r+b") as f:
        f.write(MARK)
    return device


def _holds_mark(device: str) -> bool:
    with open(device, "rb") as f:
        return f.read(len(MARK)) == MARK


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_destroy_data_without_a_device_no_longer_writes_the_plans_device(tmp_path: Path) -> None:
    # `apply --measure --destroy-data` was a yes/no switch: with no --target it overwrote the
    # device the *plan* names (issue 27). Now --destroy-data takes the device it may write.
    with loop_device() as name:
        device = _marked(name)
        plan = _write_plan_on(tmp_path / "plan.yaml", device)
        conf = tmp_path / "conf"
        conf.mkdir()
        run = iotuner("apply", str(plan), "--measure", "--destroy-data", "--conf-root",
                      str(conf), "--repeats", "2", "--runtime", "1", "--ramp", "0",
                      state=tmp_path / "state", timeout=120)  # fmt: skip
        assert _holds_mark(device), "the plan's device was written"
        assert run.returncode == 2, run.stdout + run.stderr


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_destroy_data_naming_another_device_than_the_plans_is_refused(tmp_path: Path) -> None:
    with loop_device() as planned, loop_device() as named:
        in_plan, on_line = _marked(planned), _marked(named)
        plan = _write_plan_on(tmp_path / "plan.yaml", in_plan)
        conf = tmp_path / "conf"
        conf.mkdir()
        for target in ([], ["--target", in_plan]):
            run = iotuner("apply", str(plan), "--measure", "--destroy-data", on_line, *target,
                          "--conf-root", str(conf), "--repeats", "2", "--runtime", "1",
                          state=tmp_path / "state", timeout=120)  # fmt: skip
            assert run.returncode == 2, run.stdout + run.stderr
            assert run.stderr.count("\n") == 1, run.stderr
            assert f"--destroy-data {on_line}" in run.stderr and in_plan in run.stderr
        assert _holds_mark(in_plan) and _holds_mark(on_line)
        assert not any(conf.iterdir())
