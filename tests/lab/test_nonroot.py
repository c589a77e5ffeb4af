"""Not root: `lab up` and `lab down` refuse in one line, exit 2, and create nothing.

The CLI runs in a forked child that has dropped to `nobody` (tests/nobody.py).
"""

from __future__ import annotations

import glob
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.nobody import run_as_nobody

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("command", [["lab", "up", "single-disk"], ["lab", "down"]])
def test_not_root_is_refused(monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    # A state directory `nobody` may look for (pytest's tmp_path is below a root-only
    # directory); the refusal must come before it is created.
    searchable = Path(tempfile.mkdtemp(prefix="iotuner-nonroot-"))
    searchable.chmod(0o755)
    state = searchable / "state"
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(state))
    labs_before = set(glob.glob("/dev/shm/iotuner-lab-*"))
    try:
        code, err = run_as_nobody(*command)
    finally:
        shutil.rmtree(searchable)
    assert code == 2
    assert err.strip().count("\n") == 0
    assert f"`iotuner {' '.join(command[:2])}` needs root" in err
    assert not state.exists()
    assert set(glob.glob("/dev/shm/iotuner-lab-*")) <= labs_before
