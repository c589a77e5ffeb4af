"""Fixtures for the tunables: the small host of hostroot.py, and Tunables bound to it."""

from __future__ import annotations

import pytest

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
