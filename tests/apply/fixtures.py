"""Fixtures of the tests that run the iotuner_apply role for real (tests/apply, tests/commands)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device


@pytest.fixture
def dev(state: Path) -> Iterator[str]:
    """A loop device; every apply the test left in place is undone before it goes (the
    machine's sysctl included, should another test have changed it in between)."""
    with loop_device() as name:
        yield name
        if (state / "state.db").exists():
            iotuner("rollback", "--to", "0", state=state)


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "conf"
    path.mkdir()
    return path
