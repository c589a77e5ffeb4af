"""The iotuner_apply role on a fixture host: real ansible-playbook, no root needed.

The fixture tree (tests/apply/hosts.py) stands in for /sys and /proc, so every kind of setting
can be applied here, IRQ affinity and socket buffers included, which the shared lab machine
must not change: the boot unit and its wants/ link, triples, a second run with nothing to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.apply.applylab import tree, write_plan
from tests.apply.hosts import BACKING, identity_host
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME
from tuner.apply.render import BOOT_UNIT, BOOT_WANTS, SYSCTL_CONF, UDEV_RULES
from tuner.apply.runner import run_apply
from tuner.tunables.access import Tunables

if shutil.which("ansible-playbook") is None:  # pragma: no cover - installed with iotuner
    pytest.skip("needs ansible-playbook", allow_module_level=True)

ENTRIES = [
    {"key": "block.scheduler", "target": "loop3", "value": "mq-deadline"},
    {"key": "block.read_ahead_kb", "target": "loop3", "value": 4096},
    {"key": "net.ipv4.tcp_rmem", "target": "host", "value": [4096, 87380, 33554432]},
    {"key": "vm.dirty_background_ratio", "target": "host", "value": 5},
    {"key": "irq.affinity", "target": NVME, "value": "local-node"},
]


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    return identity_host(tree)


def test_every_kind_of_setting_applied_then_nothing_to_do(
    host: SysTree, state: Path, tmp_path: Path
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    plan = write_plan(tmp_path / "plan.yaml", ENTRIES)
    run = run_apply(plan, conf_root=conf, sys_root=host.root, state=state)
    assert run.ok, run.failures()
    tunables = Tunables(host.root)
    assert tunables.read("block.read_ahead_kb", "loop3") == 4096
    assert tunables.read("net.ipv4.tcp_rmem", "host") == (4096, 87380, 33554432)
    assert tunables.read("vm.dirty_background_ratio", "host") == 5
    # local-node: the function's vectors on the CPUs of its node (2-3), not all four.
    for irq in (40, 41, 42):
        assert (host.root / f"proc/irq/{irq}/smp_affinity_list").read_text().strip() in "2-3"
    assert BACKING in (conf / UDEV_RULES).read_text()
    assert "net.ipv4.tcp_rmem = 4096 87380 33554432\n" in (conf / SYSCTL_CONF).read_text()
    assert f"irq.affinity@{NVME}=local-node" in (conf / BOOT_UNIT).read_text()
    assert (conf / BOOT_WANTS).is_symlink()
    assert str((conf / BOOT_WANTS).readlink()) == f"/{BOOT_UNIT}"

    files = tree(conf)
    again = run_apply(plan, conf_root=conf, sys_root=host.root, state=state)
    assert again.ok and again.recap[0].changed == 0
    assert tree(conf) == files

    # A smaller plan that replaces it removes what it no longer needs: the unit and its link go.
    smaller = write_plan(tmp_path / "smaller.yaml", ENTRIES[:2])
    assert run_apply(smaller, conf_root=conf, sys_root=host.root, state=state,
                     replace_all=True).ok  # fmt: skip
    assert not (conf / BOOT_UNIT).exists() and not (conf / BOOT_WANTS).is_symlink()
    assert not (conf / SYSCTL_CONF).exists()


def test_paths_reach_ansible_as_data_never_as_templates(
    host: SysTree, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ansible evaluates {{ }} in variables: a plan or a conf root named like this ran the
    # command before issue 17. (A path component holds no "/" and apply refuses "$": the
    # command finds the marker's path in the environment ansible-playbook inherits.)
    marker = tmp_path / "PWNED"
    monkeypatch.setenv("IOTUNER_MARK", str(marker))
    name = "+".join(f"chr({ord(c)})" for c in "IOTUNER_MARK")  # no quote, no slash
    command = f'python3 -c "import os; open(os.environ[{name}], chr(119))"'
    hostile = f"{{{{ lookup('pipe', '{command}') }}}}"
    conf = tmp_path / f"conf{hostile}"
    conf.mkdir()
    plan = write_plan(tmp_path / f"p{hostile}.yaml", ENTRIES[:2])
    run = run_apply(plan, check=True, conf_root=conf, sys_root=host.root, state=state)
    assert run.ok, run.failures()
    assert not marker.exists()
