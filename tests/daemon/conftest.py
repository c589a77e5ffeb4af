"""Shared fixtures of the daemon tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.daemon.loops import Loops


@pytest.fixture
def loops() -> Iterator[Loops]:
    """Loop devices in private /dev/shm directories, all detached and removed after."""
    made = Loops()
    try:
        yield made
    finally:
        made.close()
