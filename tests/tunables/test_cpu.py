"""cpu.governor on a fixture tree: every CPU, mixed layouts, refusals, and no cpufreq."""

from __future__ import annotations

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import build_host
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TunableError

GOV = "sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor"


def test_every_cpu_is_set(tunables: Tunables, host: SysTree) -> None:
    assert tunables.read("cpu.governor", "host") == "powersave"
    tunables.write("cpu.governor", "host", "performance")
    assert {(host.root / GOV.format(c)).read_text().strip() for c in range(4)} == {"performance"}


def test_mixed_governors_read_and_restore_as_a_layout(tunables: Tunables, host: SysTree) -> None:
    host.file(GOV.format(2), "performance")
    saved = tunables.save("cpu.governor", "host")
    assert saved.original == "0:powersave 1:powersave 2:performance 3:powersave"
    tunables.write("cpu.governor", "host", "performance")
    tunables.restore("cpu.governor", "host", saved)
    assert tunables.read("cpu.governor", "host") == saved.original


def test_a_governor_not_offered_is_refused(tunables: Tunables) -> None:
    with pytest.raises(InvalidValue) as err:
        tunables.write("cpu.governor", "host", "schedutil")
    assert str(err.value) == (
        "cpu.governor on host: 'schedutil' is not offered by CPU 0 (choose from performance, "
        "powersave)"
    )


def test_no_cpufreq_is_a_clear_error(tree: SysTree) -> None:
    build_host(tree, cpufreq=False)
    with pytest.raises(TunableError) as err:
        Tunables(tree.root).validate("cpu.governor", "host", "performance")
    assert str(err.value) == (
        "cpu.governor on host: no cpufreq on this host (/sys/devices/system/cpu/cpu0/cpufreq is "
        "missing: no frequency driver, as in most VMs)"
    )
