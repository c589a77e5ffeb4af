"""Running `iotuner` as a user does: a subprocess with the test's environment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def iotuner(
    *args: str, state: Path | None = None, timeout: float = 300, netns: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`iotuner ARGS...`; with `state`, IOTUNER_STATE_DIR points there for this run only;
    with `netns`, run inside that network namespace (`ip netns exec NAME iotuner ...`)."""
    env = dict(os.environ)
    # pytest-xdist's workers export COLUMNS=80 and LINES=24; a user's shell sets them without
    # exporting them, so `iotuner probe | grep` sees neither (and prints whole lines).
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    if state is not None:
        env["IOTUNER_STATE_DIR"] = str(state)
    inside = [] if netns is None else ["ip", "netns", "exec", netns]
    return subprocess.run(
        [*inside, sys.executable, "-m", "tuner.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


def ctrl_c_reaches() -> None:
    """preexec_fn for a child a test stops with SIGINT: SIGINT's default disposition, as a
    user's terminal gives it. A suite started in the background by a non-interactive shell
    (`scripts/test &`) inherits SIGINT ignored, and so would the child: it then ran on through
    the test's Ctrl-C (stop 38's suite, two tests timed out that way)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
