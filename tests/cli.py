"""Running `iotuner` as a user does: a subprocess with the test's environment."""

from __future__ import annotations

import subprocess
import sys


def iotuner(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`iotuner ARGS...` with the current environment (IOTUNER_STATE_DIR included)."""
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", *args], capture_output=True, text=True, timeout=timeout
    )
