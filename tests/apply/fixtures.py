"""Fixtures of the tests that run the iotuner_apply role for real (tests/apply, tests/commands)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device

# The scheduler first: switching it resets nr_requests.
RESET = (("scheduler", "none"), ("nr_requests", "128"), ("read_ahead_kb", "128"))


@pytest.fixture
def dev(state: Path) -> Iterator[str]:
    """A loop device; every apply the test left in place is undone before it goes (the
    machine's sysctl included, should another test have changed it in between)."""
    with loop_device() as name:
        # A reused loop device keeps the queue an earlier user left (the plans' own values,
        # even): start from the kernel's defaults so every apply here has something to change.
        # loop_device() puts back what it found.
        for attr, value in RESET:
            Path(f"/sys/block/{name}/queue/{attr}").write_text(value)
        yield name
        if (state / "state.db").exists():
            iotuner("rollback", "--to", "0", state=state)


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "conf"
    path.mkdir()
    return path
