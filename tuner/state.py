"""Where iotuner keeps its state: the journal database and the lab's record."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STATE_DIR = Path("/var/lib/iotuner")


def state_path() -> Path:
    """$IOTUNER_STATE_DIR or /var/lib/iotuner, without creating it."""
    return Path(os.environ.get("IOTUNER_STATE_DIR") or DEFAULT_STATE_DIR)


def state_dir() -> Path:
    """The state directory, created (mode 0700) on first use."""
    path = state_path()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
