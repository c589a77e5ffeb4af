"""Where iotuner keeps its state: the journal database and the lab's record."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STATE_DIR = Path("/var/lib/iotuner")


def state_dir() -> Path:
    """$IOTUNER_STATE_DIR or /var/lib/iotuner, created (mode 0700) on first use."""
    path = Path(os.environ.get("IOTUNER_STATE_DIR") or DEFAULT_STATE_DIR)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
