"""One `python -m tuner.cli ...` child of the daemon: started, read and reaped without blocking.

Its stdout is a non-blocking pipe the daemon's selector watches (the JSON result is read as it
comes, so a full pipe never holds the child); its stderr goes to a file in the state directory,
read back for the event when it fails or is stopped. The child stays in the daemon's process
group, so systemd's stop and a terminal's Ctrl-C reach it as they reach the daemon, and it is
told to get SIGTERM should the daemon die without stopping it (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tuner

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Child:
    """A running child: which step it is, its process, what it printed so far."""

    step: str  # advise | capture | tune | apply
    workload: str
    proc: subprocess.Popen[bytes]
    stderr: Path
    limit_s: float  # the daemon stops it after this long
    started: float = field(default_factory=time.monotonic)
    out: bytearray = field(default_factory=bytearray)
    open: bool = True  # stdout not at its end yet
    stopping: str | None = None  # why the daemon sent SIGTERM, when it did

    @property
    def code(self) -> int | None:
        """The exit status once reaped (negative: killed by that signal), else None."""
        return self.proc.poll()

    def fileno(self) -> int | None:
        """The stdout descriptor while it is open."""
        stream = self.proc.stdout
        return stream.fileno() if self.open and stream is not None else None

    def drain(self) -> None:
        """Read whatever stdout holds now, without waiting; note its end."""
        stream = self.proc.stdout
        while self.open and stream is not None:
            try:
                chunk = os.read(stream.fileno(), 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.open = False
                stream.close()
                return
            self.out += chunk

    def reap(self) -> bool:
        """True when the child has ended (output read). Once its stdout has closed it is
        exiting, and it is given a moment to finish."""
        self.drain()
        if not self.open and self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1.0)
        return self.proc.poll() is not None

    def overdue(self) -> bool:
        """True when it has run past its limit."""
        return time.monotonic() - self.started >= self.limit_s

    def signal(self, signo: int, why: str | None = None) -> None:
        """Send `signo` (noting `why` the daemon stops it), unless it has already ended."""
        if why is not None and self.stopping is None:
            self.stopping = why
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signo)

    def stop(self, timeout: float, why: str) -> bool:
        """SIGTERM, then wait up to `timeout` s reading its output (a full pipe would hold
        it); SIGKILL after that. True when it ended on SIGTERM (or by itself)."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM, why)
        end = time.monotonic() + timeout
        while self.proc.poll() is None:
            self.drain()
            if time.monotonic() >= end:
                self.signal(signal.SIGKILL)
                self.proc.wait()
                self.drain()
                return False
            time.sleep(0.05)
        self.drain()
        return True

    def last_words(self) -> str:
        """Its last `iotuner:` line on stderr (the one-line error, or the note of what it
        restored), else its last non-empty line; "" when it said nothing."""
        try:
            text = self.stderr.read_text(errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        ours = [line for line in lines if line.startswith("iotuner:")]
        return (ours or lines or [""])[-1][:300]


def child_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The daemon's environment for a child, with the directory holding the running `tuner`
    package first on PYTHONPATH (the child runs with -P from /: nothing else is imported)."""
    env = dict(os.environ if base is None else base)
    package_parent = str(Path(tuner.__file__).resolve().parent.parent)
    python_path = [package_parent, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(python_path))
    return env


def spawn(
    step: str, workload: str, args: Sequence[str], stderr: Path, limit_s: float, python: str
) -> Child:
    """Start `python -m tuner.cli ARGS` with stdout to a non-blocking pipe and stderr to the
    file `stderr`; OSError or SubprocessError when it cannot start."""
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            # -P and cwd=/: `python -m` would import a `tuner` planted in the daemon's working
            # directory (as root); the child imports this iotuner, by PYTHONPATH, and no other.
            [python, "-P", "-m", "tuner.cli", *args],
            cwd="/",
            env=child_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            # The daemon has one thread: the one case where preexec_fn is safe.
            preexec_fn=_die_with(os.getpid()),
        )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    return Child(step, workload, proc, stderr, limit_s)


def _die_with(parent: int) -> Callable[[], None]:
    """preexec_fn: SIGTERM to the child when `parent` dies (tune then restores and exits)."""

    def setup() -> None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the daemon died before prctl: nothing to run for
            os._exit(128 + signal.SIGTERM)

    return setup
