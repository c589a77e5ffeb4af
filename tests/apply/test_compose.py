"""Plans compose (issue 30): a second apply adds to the first instead of dropping its files.

The iotuner_apply role runs for real (ansible-playbook) on the fixture host of
tests/apply/hosts.py, so the boot unit's settings (IRQ affinity) and socket buffers, which the
shared machine must not change, can be applied and then brought back as a boot would: the
sysctl.d file's lines written as `sysctl --system` does, and the boot unit's command run.
(tests/apply/test_role.py does the udev part on a real loop device.)

An apply is one ansible-playbook run, 3 to 7 s on the shared 2-core machine (about 6 s of CPU
for the ~20 module processes it starts): the disk plan then the net plan, applied in turn, is
made once per module (`composed`) and read by the test of composition, then taken by the test
of replace and rollback, which changes it. The tests share an xdist group, so one worker runs
both in file order and builds it once; run alone or in another order, each still gets a fresh
one (a taken one is never handed out again).
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.apply.applylab import tree, write_plan
from tests.apply.hosts import BACKING, identity_host
from tests.cli import iotuner
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME
from tuner.apply import boot
from tuner.apply.compose import read_in_force
from tuner.apply.render import BOOT_UNIT, BOOT_WANTS, SYSCTL_CONF, UDEV_RULES
from tuner.apply.runner import run_apply
from tuner.tunables.access import Tunables

if shutil.which("ansible-playbook") is None:  # pragma: no cover - installed with iotuner
    pytest.skip("needs ansible-playbook", allow_module_level=True)

pytestmark = pytest.mark.xdist_group("apply-compose")

DISK = [
    {"key": "block.read_ahead_kb", "target": "loop3", "value": 4096},
    {"key": "irq.affinity", "target": NVME, "value": "local-node"},
]
NET = [
    {"key": "net.ipv4.tcp_rmem", "target": "host", "value": [4096, 87380, 33554432]},
    {"key": "vm.dirty_background_ratio", "target": "host", "value": 5},
]


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    return identity_host(tree)


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "conf"
    path.mkdir()
    return path


@dataclass
class Composed:
    """The disk plan then the net plan applied in turn on a fixture host, and the
    configuration root's files after each."""

    host: SysTree
    conf: Path
    state: Path
    folder: Path
    disk: Path
    net: Path
    after_disk: dict[str, tuple[str, bytes | str, int]]
    both: dict[str, tuple[str, bytes | str, int]]
    taken: bool = False


@pytest.fixture(scope="module")
def composed(tmp_path_factory: pytest.TempPathFactory) -> Callable[[bool], Composed]:
    """A function: take=False, the module's composed host to read (built on first use);
    take=True, one the caller may change, never handed out again."""
    made: list[Composed] = []

    def build() -> Composed:
        folder = tmp_path_factory.mktemp("composed")
        host = identity_host(SysTree(folder / "root"))
        conf, state = folder / "conf", folder / "state"
        conf.mkdir()
        disk = write_plan(folder / "disk.yaml", DISK)
        net = write_plan(folder / "net.yaml", NET)
        first = run_apply(disk, conf_root=conf, sys_root=host.root, state=state)
        assert first.ok, first.failures()
        after_disk = tree(conf)
        second = run_apply(net, conf_root=conf, sys_root=host.root, state=state)
        assert second.ok, second.failures()
        return Composed(host, conf, state, folder, disk, net, after_disk, tree(conf))

    def get(take: bool) -> Composed:
        if not made or made[-1].taken:
            made.append(build())
        made[-1].taken = take
        return made[-1]

    return get


def reboot(host: SysTree, conf: Path) -> None:
    """Forget every live value (the fixture's defaults back), then do what a boot does with
    the managed files: sysctl.d's lines written (`sysctl --system`), the boot unit's command
    run. udev's part is the loop device's own rule, which the fixture host cannot run."""
    tunables = Tunables(host.root)
    tunables.write("net.ipv4.tcp_rmem", "host", (4096, 131072, 6291456))
    tunables.write("vm.dirty_background_ratio", "host", 10)
    for irq in (40, 41, 42):
        (host.root / f"proc/irq/{irq}/smp_affinity_list").write_text("0-3\n")
    sysctl = conf / SYSCTL_CONF
    if sysctl.exists():
        for line in sysctl.read_text().splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.partition(" = ")
                tunables.write(key, "host", value)
    unit = conf / BOOT_UNIT
    if unit.exists() and (conf / BOOT_WANTS).is_symlink():
        (line,) = [ln for ln in unit.read_text().splitlines() if ln.startswith("ExecStart=")]
        args = shlex.split(line.removeprefix("ExecStart="))
        assert args[1:3] == ["-m", "tuner.apply.boot"]
        assert boot.main(args[3:], root=Tunables(host.root).sys) == 0


def in_force(host: SysTree) -> dict[str, object]:
    tunables = Tunables(host.root)
    irqs = {
        (host.root / f"proc/irq/{n}/smp_affinity_list").read_text().strip() for n in (40, 41, 42)
    }
    return {
        # local-node: the function's vectors on the CPUs of its node (2-3), spread over them.
        "irq": irqs <= {"2", "3", "2-3"},
        "rmem": tunables.read("net.ipv4.tcp_rmem", "host"),
        "dirty": tunables.read("vm.dirty_background_ratio", "host"),
    }


BOTH = {"irq": True, "rmem": (4096, 87380, 33554432), "dirty": 5}


def test_two_plans_applied_in_turn_are_both_in_force_after_a_reboot(
    composed: Callable[[bool], Composed], tmp_path: Path
) -> None:
    # Reads the composed host; the reboot below writes back the values the plans set.
    made = composed(False)
    host, conf, state, disk, net = made.host, made.conf, made.state, made.disk, made.net
    # Before issue 30 the second apply removed the disk plan's udev rule and boot unit.
    assert BACKING in (conf / UDEV_RULES).read_text()
    assert f"irq.affinity@{NVME}=local-node" in (conf / BOOT_UNIT).read_text()
    for rel in (UDEV_RULES, SYSCTL_CONF, BOOT_UNIT):
        header = (conf / rel).read_text()
        assert "it holds 2 plans" in header, rel
        assert f"#   {disk} (tune plan of 2026-11-22T07:10:00+00:00)\n" in header, rel
        assert f"#   {net} (tune plan of 2026-11-22T07:10:00+00:00)\n" in header, rel
    reboot(host, conf)
    assert in_force(host) == BOTH
    assert [m.plan_path for m in read_in_force(state / "state.db").members] == [
        str(disk),
        str(net),
    ]
    # history and status list both, status also when no daemon answers.
    listed = iotuner("history", state=state)
    assert listed.returncode == 0, listed.stderr
    assert "plans in force (2, oldest first" in listed.stdout
    assert f"  {disk} (tune plan of" in listed.stdout and f"  {net} (tune plan of" in listed.stdout
    no_daemon = str(tmp_path / "none.sock")
    shown = iotuner("status", "--socket", no_daemon, state=state)
    assert shown.returncode == 1
    assert f"  {disk} (tune plan of 2026-11-22T07:10:00+00:00, apply #1)" in shown.stdout
    assert f"  {net} (tune plan of 2026-11-22T07:10:00+00:00, apply #2)" in shown.stdout
    doc = json.loads(iotuner("status", "--socket", no_daemon, "--json", state=state).stdout)
    assert [p["plan"] for p in doc["plans_in_force"]] == [str(disk), str(net)]


def test_a_later_entry_wins_and_a_plan_it_covers_leaves(
    host: SysTree, conf: Path, state: Path, tmp_path: Path
) -> None:
    first = write_plan(tmp_path / "first.yaml", NET)
    again = write_plan(tmp_path / "again.yaml", [{**NET[1], "value": 7}])
    assert run_apply(first, conf_root=conf, sys_root=host.root, state=state).ok
    assert run_apply(again, conf_root=conf, sys_root=host.root, state=state).ok
    text = (conf / SYSCTL_CONF).read_text()
    assert "vm.dirty_background_ratio = 7\n" in text and "= 5\n" not in text
    assert "net.ipv4.tcp_rmem = 4096 87380 33554432\n" in text
    # Both still hold an entry; once a plan sets all of the first one's entries, it goes.
    whole = write_plan(tmp_path / "whole.yaml", [{**NET[0], "value": [4096, 87380, 8388608]}])
    assert run_apply(whole, conf_root=conf, sys_root=host.root, state=state).ok
    members = [m.plan_path for m in read_in_force(state / "state.db").members]
    assert members == [str(again), str(whole)]


def test_replace_is_explicit_and_rollback_to_is_exact(
    composed: Callable[[bool], Composed],
) -> None:
    made = composed(True)
    host, conf, state, disk, net = made.host, made.conf, made.state, made.disk, made.net
    after_disk, both = made.after_disk, made.both
    assert tree(conf) == both
    assert run_apply(net, conf_root=conf, sys_root=host.root, state=state,
                     replace_all=True).ok  # fmt: skip
    assert not (conf / UDEV_RULES).exists() and not (conf / BOOT_UNIT).exists()
    assert [m.plan_path for m in read_in_force(state / "state.db").members] == [str(net)]
    # rollback --to 2: the replace undone, both plans back, byte for byte; --to 1: the disk's.
    done = iotuner("rollback", "--to", "2", state=state)
    assert done.returncode == 0, done.stderr
    assert tree(conf) == both
    assert iotuner("rollback", "--to", "1", state=state).returncode == 0
    assert tree(conf) == after_disk
    assert [m.plan_path for m in read_in_force(state / "state.db").members] == [str(disk)]
