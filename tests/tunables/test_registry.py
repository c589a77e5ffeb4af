"""One registry: every key has code, no code lacks a key, and each reads on the fixture host."""

from __future__ import annotations

from tests.tunables.hostroot import NVME
from tuner.tunables.access import Tunables
from tuner.tunables.registry import TUNABLES
from tuner.tunables.table import IMPLEMENTATIONS

TARGETS = {"device": "loop3", "host": "host", "nic": "eth0", "irq": NVME}


def test_every_registry_key_has_an_implementation() -> None:
    assert set(IMPLEMENTATIONS) == set(TUNABLES)
    assert all(impl.key == key for key, impl in IMPLEMENTATIONS.items())


def test_every_key_reads_and_revalidates_its_own_value(tunables: Tunables) -> None:
    for key, spec in TUNABLES.items():
        target = TARGETS[spec.scope]
        value = tunables.read(key, target)
        if key in ("vm.dirty_background_bytes", "vm.dirty_bytes"):
            continue  # 0 means "the ratio is in force" and cannot be written back as such
        assert tunables.validate(key, target, value) == value, key
