"""irq.affinity on a fixture tree: layouts, the three policies, refusals, and EPERM."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TargetGone, TunableError
from tuner.tunables.irq import format_cpulist


def affinity(host: SysTree, irq: int) -> str:
    return (host.root / f"proc/irq/{irq}/smp_affinity_list").read_text().strip()


def test_read_gives_the_exact_layout(tunables: Tunables) -> None:
    assert tunables.read("irq.affinity", NVME) == "40:0-3 41:0-3 42:0-3"


@pytest.mark.parametrize(
    ("policy", "layout"),
    [
        ("local-node", "40:2 41:3 42:2"),  # round robin over node 1's CPUs
        ("one-cpu", "40:2 41:2 42:2"),
        ("all", "40:0-3 41:0-3 42:0-3"),
        ("40:1 41:2-3 42:0", "40:1 41:2-3 42:0"),
    ],
)
def test_policies_write_their_layout(
    tunables: Tunables, host: SysTree, policy: str, layout: str
) -> None:
    assert tunables.expected("irq.affinity", NVME, policy) == layout
    tunables.write("irq.affinity", NVME, policy)
    assert tunables.read("irq.affinity", NVME) == layout


def test_a_legacy_line_without_msi(host: SysTree) -> None:
    host.file("sys/bus/pci/devices/0000:00:1f.2/irq", 43).file(
        "sys/bus/pci/devices/0000:00:1f.2/local_cpulist", "0-3"
    )
    tunables = Tunables(host.root)
    tunables.write("irq.affinity", "0000:00:1f.2", "one-cpu")
    assert affinity(host, 43) == "0"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("everywhere", "'everywhere' is not one of local-node, one-cpu, all"),
        ("40:1 41:1", "layout '40:1 41:1' does not name IRQs [40, 41, 42]"),
        ("40:1 41:1 42:7", "'42:7' names CPUs that are not online"),
        ("40:x 41:1 42:1", "'40:x' is not IRQ:CPU-list"),
    ],
)
def test_refusals(tunables: Tunables, value: str, why: str) -> None:
    with pytest.raises(InvalidValue) as err:
        tunables.validate("irq.affinity", NVME, value)
    assert str(err.value) == f"irq.affinity on {NVME}: {why}"


def test_a_read_only_affinity_is_refused_before_any_write(
    tunables: Tunables, host: SysTree
) -> None:
    # The kernel makes smp_affinity_list 0444 exactly when it will answer EPERM.
    (host.root / "proc/irq/41/smp_affinity_list").chmod(0o444)
    with pytest.raises(TunableError) as err:
        tunables.write("irq.affinity", NVME, "local-node")
    assert str(err.value) == (
        f"irq.affinity on {NVME}: not permitted here (EPERM writing /proc/irq/41/smp_affinity_list)"
    )
    assert [affinity(host, irq) for irq in (40, 41, 42)] == ["0-3"] * 3
    # A policy that leaves the read-only IRQ as it is goes through.
    tunables.write("irq.affinity", NVME, "all")


def test_eperm_during_the_write_puts_back_what_was_written(
    tunables: Tunables, host: SysTree
) -> None:
    path = host.root / "proc/irq/41/smp_affinity_list"
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("needs chattr +i (root, on a file system that has it) to refuse a write")
    try:
        with pytest.raises(TunableError) as err:
            tunables.write("irq.affinity", NVME, "one-cpu")
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    assert "not permitted here (EPERM writing /proc/irq/41/smp_affinity_list)" in str(err.value)
    assert affinity(host, 40) == "0-3", "IRQ 40 was written, then put back"


def test_a_missing_function(tunables: Tunables) -> None:
    with pytest.raises(TargetGone, match=r"no such PCI function \(/sys/bus/pci/devices/0000:99"):
        tunables.read("irq.affinity", "0000:99:00.0")


def test_cpu_lists_are_compact() -> None:
    assert format_cpulist((0, 1, 2, 5, 7, 8)) == "0-2,5,7-8"


@pytest.mark.live
def test_the_live_host_refuses_managed_irqs() -> None:
    """On the development VM the virtio disk's request queue IRQ is managed: EPERM."""
    rel = Path("/proc/irq/36/smp_affinity_list")
    if (
        not Path("/sys/bus/pci/devices/0000:00:02.0/msi_irqs/36").exists()
        or rel.stat().st_mode & 0o200
    ):
        pytest.skip("not the development VM's layout")
    with pytest.raises(TunableError) as err:
        Tunables().validate("irq.affinity", "0000:00:02.0", "local-node")
    assert str(err.value) == (
        "irq.affinity on 0000:00:02.0: not permitted here "
        "(EPERM writing /proc/irq/36/smp_affinity_list)"
    )
