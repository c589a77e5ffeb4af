"""Not root: `lab up` and `lab down` refuse in one line, exit 2, and create nothing.

The CLI runs in a forked child that has dropped to `nobody` (setpriv or su would start a fresh
interpreter, which cannot read this root-owned Python installation's packages).
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import pwd
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

pytestmark = pytest.mark.lab


def warm_up(main: Callable[[], None], args: list[str]) -> None:
    """Run `ARGS --help` as root first: typer and rich import modules lazily, and `nobody`
    cannot read them from this root-only installation."""
    saved = sys.argv
    sys.argv = ["iotuner", *args, "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit):
            main()
    finally:
        sys.argv = saved
    Console(file=io.StringIO()).print("[bold red]iotuner:[/] warm", highlight=False, soft_wrap=True)


def run_as_nobody(*args: str) -> tuple[int, str]:
    """(exit code, stderr) of `iotuner ARGS...` run by uid nobody in a forked child."""
    from tuner.cli import main

    warm_up(main, list(args))
    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges for good, then run the command line
        code = 70
        try:
            sys.stderr = open(write_end, "w", closefd=False)  # noqa: SIM115 (flushed below)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            sys.argv = ["iotuner", *args]
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        err = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), err


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
