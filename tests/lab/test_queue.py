"""The lab's queue settings go through the tunables: journaled first, kept once set, and rolled
back by `iotuner rollback` when `lab up` is killed in the middle of a reset."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tuner.lab.queue import defaults, queue_engine, read_queue, write_queue
from tuner.tunables.access import Tunables
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]

# A reset that dies, by SIGKILL, when it comes to read_ahead_kb: the settings before it are
# written and journaled, not yet kept.
KILLED_RESET = """
import os, signal, sys
from tuner.lab.queue import defaults, queue_engine, write_queue

class DiesAtReadahead(dict):
    def __getitem__(self, name):
        if name == "read_ahead_kb":
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(name)

with queue_engine() as engine:
    write_queue(engine, sys.argv[1], DiesAtReadahead(defaults(engine.tunables.sys, sys.argv[1])))
"""


def _used(name: str) -> dict[str, str]:
    """Settings an earlier user might have left, all unlike a fresh loop device's."""
    with TunableEngine() as engine:
        assert write_queue(engine, name, {"scheduler": "mq-deadline", "nr_requests": "64",
                                          "read_ahead_kb": "512"}) == []  # fmt: skip
    return read_queue(Tunables(), name)


@pytest.mark.lab_parallel  # its own loop device and journal; no figure
def test_a_reset_is_journaled_and_kept(state: Path) -> None:
    with loop_device() as name:
        found = _used(name)
        with queue_engine() as engine:
            fresh = defaults(engine.tunables.sys, name)
            assert write_queue(engine, name, fresh) == []
        now = read_queue(Tunables(), name)
        assert now == fresh != found
        with Journal(state / "state.db") as journal:
            changes = [c for s in journal.sessions() for c in journal.changes(s.id)]
        originals = {c.key: str(c.saved.original) for c in changes if c.target == name}
        assert originals["block.scheduler"] == found["scheduler"] == "mq-deadline"
        assert originals["block.read_ahead_kb"] == found["read_ahead_kb"] == "512"
        assert {c.outcome for c in changes} == {"kept"}
        assert iotuner("rollback", state=state).stdout.strip() == "nothing to roll back"
        assert read_queue(Tunables(), name) == now


@pytest.mark.lab_parallel  # its own loop device and journal; no figure
def test_a_reset_killed_midway_is_rolled_back(state: Path) -> None:
    with loop_device() as name:
        found = _used(name)
        env = {**os.environ, "PYTHONPATH": str(REPO), "IOTUNER_STATE_DIR": str(state)}
        child = subprocess.run([sys.executable, "-c", KILLED_RESET, name], env=env, timeout=60)
        assert child.returncode == -9
        assert read_queue(Tunables(), name)["scheduler"] == "none", "the reset had begun"
        result = iotuner("rollback", state=state)
        assert result.returncode == 0, result.stderr
        assert read_queue(Tunables(), name) == found
