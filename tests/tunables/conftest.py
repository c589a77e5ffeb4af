"""Fixtures for the tunables: the small host of hostroot.py, Tunables bound to it, and a loop
device for the lab tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.owned import Owned
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import build_host
from tuner.tunables.access import Tunables


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    """The small host's files."""
    return build_host(tree)


@pytest.fixture
def tunables(host: SysTree) -> Tunables:
    """Every tunable, bound to the small host."""
    return Tunables(host.root)


@pytest.fixture
def loop(state: Path, owned: Owned) -> str:
    """A loop device made for the test, journaled in the test's own state directory; put back
    and detached by `owned`'s finalizer, also after a failure."""
    return owned.loop()
