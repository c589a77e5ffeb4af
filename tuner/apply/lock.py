"""One lock for whoever changes what the host should hold: apply, rollback, the daemon.

`iotuner apply` and `iotuner rollback` hold it while they write; the daemon only tries it
before re-applying drifted values and skips its check when it is taken. Without it the daemon
would see an apply's or a rollback's first writes as drift from the plan it still holds and
put the old values back under their feet.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from tuner.state import state_dir

LOCK_NAME = "changes.lock"


@contextlib.contextmanager
def changes_lock(directory: Path | None = None, *, wait: bool = True) -> Iterator[bool]:
    """Hold the lock (in `directory`, default the state directory) for the block; with
    wait=False yields False at once when someone else holds it."""
    where = state_dir() if directory is None else directory
    fd = os.open(where / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        # Closing the descriptor releases the lock; a killed holder releases it the same way.
        os.close(fd)
