"""The iotuner_apply role, run for real by ansible-playbook against localhost on loop devices.

Each test gets its own loop device, configuration root (a directory standing in for /etc) and
state directory. Only block.* values are changed live; the sysctl entry always holds the value
the machine already has, so only its file is written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.apply.applylab import (
    APPLIED,
    SYSCTL,
    backing_file,
    block_entries,
    queue,
    refused,
    sysctl_entry,
    tree,
    udev_rules,
    write_plan,
)
from tests.cli import iotuner
from tuner.apply import changeset
from tuner.apply.render import SYSCTL_CONF, UDEV_RULES
from tuner.apply.runner import PlaybookRun, run_apply
from tuner.tunables.journal import Journal

# Parallel-safe: each test has its own loop device, configuration root and state directory,
# and the sysctl it persists is written at the value the host already has.
pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]

if shutil.which("ansible-playbook") is None:  # pragma: no cover - installed with iotuner
    pytest.skip("needs ansible-playbook", allow_module_level=True)


def history(state: Path) -> list[str]:
    """The statuses of the applies journaled, oldest first."""
    if not (state / "state.db").exists():
        return []
    with Journal(state / "state.db") as journal:
        return [r.status for r in reversed(changeset.history(journal))]


def live_items(run: PlaybookRun) -> dict[str, str]:
    """iotuner_tunable's per-item status: "block.scheduler on loop3" -> "changed"."""
    return {t.item or "": t.status for t in run.of_action("iotuner_tunable")}


def test_apply_sets_values_writes_files_and_is_idempotent(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path / "plan.yaml", [*block_entries(dev), sysctl_entry()])
    first = run_apply(plan, conf_root=conf, state=state)
    assert first.ok, first.failures()
    assert queue(dev) == APPLIED
    rules = (conf / UDEV_RULES).read_text()
    # Matched by what stays (the backing file), never by the kernel name.
    assert f'ATTR{{loop/backing_file}}=="{backing_file(dev)}"' in rules
    assert 'ATTR{queue/read_ahead_kb}="4093"' in rules
    sysctl = (conf / SYSCTL_CONF).read_text()
    assert f"{SYSCTL} = {sysctl_entry()['value']}\n" in sysctl
    assert oct(os.stat(conf / SYSCTL_CONF).st_mode & 0o777) == "0o644"
    assert first.recap[0].changed > 0
    assert live_items(first)[f"block.scheduler on {dev}"] == "changed"
    assert live_items(first)[f"{SYSCTL} on host"] == "ok"

    files = tree(conf)
    second = run_apply(plan, conf_root=conf, state=state)
    assert second.ok and second.recap[0].changed == 0
    assert [t for t in second.tasks if t.changed] == []
    assert tree(conf) == files and queue(dev) == APPLIED
    # The no-op run is journaled too (before it knew), then marked so rollback skips it.
    assert history(state) == ["applied", "unchanged"]

    # Once applied, check mode finds nothing to do, and shows the file it would change. (Check
    # mode on a fresh host: tests/commands/test_apply.py, where users see its diff.)
    assert run_apply(plan, check=True, conf_root=conf, state=state).recap[0].changed == 0
    other = write_plan(tmp_path / "other.yaml", [{**block_entries(dev)[1], "value": 8192}])
    run = run_apply(other, check=True, diff=True, conf_root=conf, state=state)
    assert tree(conf) == files and queue(dev) == APPLIED
    (rules,) = [t for t in run.of_action("copy") if t.item == str(conf / UDEV_RULES)]
    assert rules.changed and '"8192"' in rules.diff[0]["after"]
    assert '"4093"' in rules.diff[0]["before"]
    assert history(state) == ["applied", "unchanged"]


def test_bad_plan_fails_before_anything_is_written(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    entries = [*block_entries(dev), {"key": "block.nr_requests", "target": "loop999", "value": 64}]
    plan = write_plan(tmp_path / "plan.yaml", entries)
    before = queue(dev)
    run = run_apply(plan, conf_root=conf, state=state)
    assert not run.ok
    (failed,) = run.failures()
    assert failed.action == "iotuner_plan"
    assert "entries[3] (block.nr_requests on loop999)" in failed.msg
    assert queue(dev) == before and tree(conf) == {} and history(state) == []


def test_a_failure_in_the_middle_leaves_the_host_as_before(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    # An admin's own file where iotuner's goes: it must come back byte for byte, mode too.
    rules = conf / UDEV_RULES
    rules.parent.mkdir(parents=True)
    rules.write_bytes(b'# mine\nKERNEL=="sdq", ATTR{queue/nomerges}="2"')
    os.chmod(rules, 0o600)
    files, before = tree(conf), queue(dev)
    plan = write_plan(tmp_path / "plan.yaml", [*block_entries(dev), sysctl_entry()])
    # Files first, then the scheduler; the kernel refuses readahead; the depth is still
    # written after it (a loop task runs all its items) before the rescue undoes it all.
    with refused(f"/sys/block/{dev}/queue/read_ahead_kb"):
        run = run_apply(plan, conf_root=conf, state=state)
    assert not run.ok and run.recap[0].rescued == 1
    statuses = live_items(run)
    assert statuses[f"block.scheduler on {dev}"] == "changed"
    assert statuses[f"block.read_ahead_kb on {dev}"] == "failed"
    assert statuses[f"block.nr_requests on {dev}"] == "changed"
    assert any(t.changed for t in run.of_action("copy"))
    assert "EROFS" in run.failures()[-1].msg
    assert "everything put back as it was" in run.failures()[-1].msg
    assert queue(dev) == before
    assert tree(conf) == files
    assert history(state) == ["rolled-back"]


def forget_and_replay_udev(dev: str, original: dict[str, str], rules: str) -> None:
    """The device forgets its queue (as after a re-attach: the scheduler first, it resets the
    depth), then udev's change event runs with `rules` (`udevadm test` does the ATTR writes;
    no udevd here)."""
    for name in ("scheduler", "read_ahead_kb", "nr_requests"):
        Path(f"/sys/block/{dev}/queue/{name}").write_text(original[name])
    assert queue(dev) == original
    with udev_rules(rules):
        subprocess.run(["udevadm", "test", "--action=change", f"/sys/block/{dev}"],
                       capture_output=True, check=True, timeout=60)  # fmt: skip


def test_the_udev_rule_brings_the_settings_back_and_a_second_plan_keeps_it(
    dev: str, conf: Path, state: Path, tmp_path: Path
) -> None:
    """The disk plan's udev rule brings its settings back once the device forgets them. Then
    issue 30: `apply net.yaml` after it; after a "reboot" (the queue forgotten, udev's change
    event run with the managed rules, `sysctl -p` of the managed sysctl.d file) both plans are
    in force. The second apply used to remove the udev rule. (One test, one loop device: the
    first apply is the start of the second's story, an ansible-playbook run saved.)"""
    if shutil.which("udevadm") is None or shutil.which("sysctl") is None:
        pytest.skip("needs udevadm and sysctl")
    original = queue(dev)
    disk = write_plan(tmp_path / "disk.yaml", block_entries(dev))
    net = write_plan(tmp_path / "net.yaml", [sysctl_entry()])
    assert run_apply(disk, conf_root=conf, state=state).ok
    forget_and_replay_udev(dev, original, (conf / UDEV_RULES).read_text())
    assert queue(dev) == APPLIED
    second = run_apply(net, conf_root=conf, state=state)
    assert second.ok, second.failures()
    rules = (conf / UDEV_RULES).read_text()
    assert backing_file(dev) in rules and "it holds 2 plans" in rules
    assert f"{SYSCTL} = " in (conf / SYSCTL_CONF).read_text()
    # Each plan in force verifies against the files the union wrote.
    for plan in (disk, net):
        checked = iotuner("verify", "--conf-root", str(conf), str(plan), state=state)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    forget_and_replay_udev(dev, original, rules)
    assert queue(dev) == APPLIED
    # The sysctl entry holds the value the host has: loading the file changes nothing else.
    loaded = subprocess.run(["sysctl", "-p", str(conf / SYSCTL_CONF)],
                            capture_output=True, text=True, check=True, timeout=30)  # fmt: skip
    assert loaded.stdout.strip() == f"{SYSCTL} = {sysctl_entry()['value']}"
