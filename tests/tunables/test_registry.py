"""One registry: every key has code, no code lacks a key, and each reads on the fixture host."""

from __future__ import annotations

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME, switch_scheduler
from tuner.facts.catalog import fact_names
from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError
from tuner.tunables.iosched import SchedulerParameter
from tuner.tunables.registry import TUNABLES
from tuner.tunables.table import IMPLEMENTATIONS

TARGETS = {"device": "loop3", "host": "host", "nic": "eth0", "irq": NVME}


def target_of(key: str, host: SysTree) -> str:
    """The fixture target `key` reads on: a scheduler's parameter, on loop3 once that
    scheduler is in force there (the files exist only then)."""
    impl = IMPLEMENTATIONS[key]
    if isinstance(impl, SchedulerParameter):
        switch_scheduler(host, "loop3", impl.scheduler)
    return TARGETS[TUNABLES[key].scope]


def test_every_registry_key_has_an_implementation() -> None:
    assert set(IMPLEMENTATIONS) == set(TUNABLES)
    assert all(impl.key == key for key, impl in IMPLEMENTATIONS.items())


def test_every_key_reads_and_revalidates_its_own_value(tunables: Tunables, host: SysTree) -> None:
    for key in TUNABLES:
        target = target_of(key, host)
        value = tunables.read(key, target)
        if key in ("vm.dirty_background_bytes", "vm.dirty_bytes"):
            continue  # 0 means "the ratio is in force" and cannot be written back as such
        assert tunables.validate(key, target, value) == value, key


def test_every_key_names_its_kernel_file_and_udev_keys_their_rule(
    tunables: Tunables, host: SysTree
) -> None:
    """A tunable says where it lives (apply and verify show it) and, when udev holds it, the
    assignment: the NIC's is its own attribute, not a block queue's."""
    for key, spec in TUNABLES.items():
        target = target_of(key, host)
        # A setting only ethtool shows names the command (`ethtool -g eth0`), not a file.
        assert tunables.path(key, target).startswith(("/sys/", "/proc/", "ethtool -")), key
        value = tunables.read(key, target)
        impl = IMPLEMENTATIONS[key]
        if spec.persist == "udev":
            assert impl.udev_assignment(value).startswith(("ATTR{", "RUN+=")), key
        else:
            with pytest.raises(TunableError, match="not persisted by a udev rule"):
                impl.udev_assignment(value)
    assert tunables.path("block.read_ahead_kb", "loop3") == "/sys/block/loop3/queue/read_ahead_kb"
    assert IMPLEMENTATIONS["nic.mtu"].udev_assignment(9000) == 'ATTR{mtu}="9000"'
    assert IMPLEMENTATIONS["block.write_cache"].udev_assignment("write through") == (
        'ATTR{queue/write_cache}="write through"'
    )


def test_a_tunables_current_value_fact_is_one_the_rules_can_read() -> None:
    """The rules report what a key holds now through the fact its tunable names."""
    scope_kinds = {"device": "disk", "host": "host", "nic": "nic", "irq": "nic"}
    named = 0
    for key, spec in TUNABLES.items():
        fact = IMPLEMENTATIONS[key].current_fact
        if fact is not None:
            assert fact in fact_names(scope_kinds[spec.scope]), (key, fact)
            named += 1
    assert named >= 15
