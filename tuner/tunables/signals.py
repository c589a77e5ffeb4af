"""SIGTERM and Ctrl-C restore what an engine changed, then exit 128 + the signal's number."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Protocol

from tuner.tunables.base import TunableError


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived; raised from the handler so `finally` blocks run."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


class Restorable(Protocol):
    """An engine whose changes can be put back, counting what it has put back so far."""

    restored_count: int

    def restore(self) -> Sequence[object]:
        """Restore everything changed; returns what was restored."""


@contextlib.contextmanager
def restore_on_signals(engine: Restorable) -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT restore the engine's changes, print one line and
    exit with 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), no traceback."""
    signals = (signal.SIGTERM, signal.SIGINT)
    # What the engine had restored when the signal came: a trial's own `finally` may put its
    # settings back on the way out, before the restore below; both count.
    counted_at: list[int] = []

    def interrupt(signo: int, frame: FrameType | None) -> None:
        counted_at.append(engine.restored_count)
        raise Interrupted(signo)

    previous = {signo: signal.signal(signo, interrupt) for signo in signals}
    try:
        yield
    except Interrupted as stop:
        # A second Ctrl-C must not cut the restore short.
        for signo in signals:
            signal.signal(signo, signal.SIG_IGN)
        name = signal.Signals(stop.signo).name
        try:
            engine.restore()
        except TunableError as err:
            print(f"iotuner: {name}, restore incomplete: {err}", file=sys.stderr)
            raise SystemExit(128 + stop.signo) from None
        restored = engine.restored_count - counted_at[0]
        print(f"iotuner: {name}, restored {restored} setting(s)", file=sys.stderr)
        raise SystemExit(128 + stop.signo) from None
    finally:
        for signo, handler in previous.items():
            signal.signal(signo, handler)
