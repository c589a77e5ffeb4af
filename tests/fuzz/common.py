"""What every fuzz test shares: how many examples, a hard time limit, and the corpus.

Each surface iotuner reads (captured trees, plans, fio jobs, daemon configs, control-socket
requests) has a test that generates hostile inputs with hypothesis and a test that replays the
corpus in tests/fuzz/corpus/<surface>/: inputs that once failed (the audit of issue 17, and what
the fuzz runs found). An input is handled when it is accepted, or refused with a one-line
BadInput (exit 2); never a traceback, never more than TIME_LIMIT seconds.

IOTUNER_FUZZ_EXAMPLES sets the examples per surface: 25 by default (the suite, CI), 1000 for
the run recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from hypothesis import HealthCheck, event, settings
from hypothesis.control import currently_in_test_context

from tuner.errors import BadInput

CORPUS = Path(__file__).parent / "corpus"
TIME_LIMIT = 10.0
"""Seconds one input may take, whatever it is (issue 17's acceptance)."""
EXAMPLES = int(os.environ.get("IOTUNER_FUZZ_EXAMPLES") or 25)

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # `within` enforces the limit, and also ends a hang
    database=None,  # nothing written into the checkout; failures print their reproduction
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class TooSlow(Exception):
    """An input took longer than TIME_LIMIT seconds."""


@contextmanager
def within(seconds: float = TIME_LIMIT) -> Iterator[None]:
    """Raise TooSlow in this (the main) thread if the block runs longer than `seconds`."""

    def expire(signo: int, frame: FrameType | None) -> None:
        raise TooSlow(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def refused_well(err: BadInput) -> str:
    """The message of a refusal, checked: one line, exit code 2."""
    message = str(err)
    assert err.exit_code == 2, message
    assert message and "\n" not in message and "\r" not in message, repr(message)
    assert "Traceback" not in message
    return message


def corpus(surface: str) -> list[Path]:
    """The saved inputs of one surface, sorted (pytest ids are their names)."""
    return sorted(p for p in (CORPUS / surface).iterdir() if not p.name.startswith("."))


def note(what: str) -> None:
    """Count `what` in hypothesis's statistics (--hypothesis-show-statistics); a no-op when
    a corpus input is replayed outside a hypothesis test."""
    if currently_in_test_context():
        event(what)
