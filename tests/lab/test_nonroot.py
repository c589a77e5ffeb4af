"""Not root: `lab up` and `lab down` refuse in one line, exit 2, and create nothing.

The CLI runs in a forked child that has dropped to `nobody` (tests/nobody.py).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.nobody import run_as_nobody

pytestmark = pytest.mark.lab


def labs_of(uid: int) -> set[str]:
    """The lab directories in /dev/shm that `uid` made: another test's labs, made at the same
    time on another xdist worker, are root's."""
    return {p for p in glob.glob("/dev/shm/iotuner-lab-*") if os.stat(p).st_uid == uid}


@pytest.mark.lab_parallel  # refused before anything is made; only nobody's labs looked for
@pytest.mark.parametrize("command", [["lab", "up", "single-disk"], ["lab", "down"]])
def test_not_root_is_refused(monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    # A state directory `nobody` may look for (pytest's tmp_path is below a root-only
    # directory); the refusal must come before it is created.
    searchable = Path(tempfile.mkdtemp(prefix="iotuner-nonroot-"))
    searchable.chmod(0o755)
    state = searchable / "state"
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(state))
    try:
        code, err = run_as_nobody(*command)
    finally:
        shutil.rmtree(searchable)
    assert code == 2
    assert err.strip().count("\n") == 0
    assert f"`iotuner {' '.join(command[:2])}` needs root" in err
    assert not state.exists()
    assert labs_of(pwd.getpwnam("nobody").pw_uid) == set()
