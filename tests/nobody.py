"""Running `iotuner` as the unprivileged user `nobody`, in a forked child of the test.

setpriv or su would start a fresh interpreter, which cannot read this root-owned Python
installation's packages: the child is forked from the test's interpreter instead, with what
the command needs imported while still root.
"""

from __future__ import annotations

import contextlib
import io
import os
import pwd
import sys
import traceback
from collections.abc import Callable

import pytest
from rich.console import Console


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
