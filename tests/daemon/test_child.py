"""The daemon's children (`python -m tuner.cli advise|tune|apply`) import iotuner, not what
lies in the directory the daemon was started from (issue 27).

`python -m` puts the working directory first on sys.path: a root daemon started from a shared
directory (or any directory another user can write) imported a planted `tuner` package there,
as root, in every re-tune child.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tuner.daemon.child import spawn


def test_a_child_does_not_import_from_the_daemons_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared, marker = tmp_path / "shared", tmp_path / "MARKER"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "tuner"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "cli.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.chdir(shared)
    stderr = tmp_path / "child.stderr"
    child = spawn("advise", "w", ["--version"], stderr, 30, sys.executable)
    deadline = time.monotonic() + 60
    while child.proc.poll() is None and time.monotonic() < deadline:
        child.drain()
        time.sleep(0.05)
    child.drain()
    assert child.proc.poll() == 0, stderr.read_text()
    assert not marker.exists()
    assert os.getcwd() == str(shared)  # the daemon's own working directory is left alone
