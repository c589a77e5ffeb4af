"""A captured trace replayed by fio on a trial target while the target is captured: the
replay's own fingerprint, compared with the original's (its fidelity).

    found, log = replay_captured(Path("db.trace"), target, speed=1.0)

The iolog and the job are iotuner's (tuner/capture/iolog.py): written into a RunDir made for
this replay and removed after it, the options checked by iolog.check_replay.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from tuner.capture.check import SLACK_S, run_text_captured
from tuner.capture.fingerprint import Fingerprint
from tuner.capture.iolog import Iolog, RunDir, from_trace, replay_options
from tuner.errors import BadInput
from tuner.trials.fio import escape_path, job_comment
from tuner.trials.targets import TrialTarget

MIN_RUNTIME_S = 1.0


def replay_job(options: dict[str, str], runtime_s: float) -> str:
    """The replay's job file: iotuner's checked options and a bounded runtime."""
    lines = [job_comment("replay of a captured trace"), "[global]"]
    lines += [f"{key}={escape_path(value) if key == 'read_iolog' else value}"
              for key, value in options.items()]  # fmt: skip
    lines += [f"runtime={round(runtime_s * 1000)}ms", "group_reporting=1", "[replay]"]
    return "\n".join(lines) + "\n"


def replay_captured(
    trace_path: Path,
    target: TrialTarget,
    *,
    speed: float = 1.0,
    region_bytes: int | None = None,
    may_write: bool = False,
    trace: BinaryIO | None = None,
) -> tuple[Fingerprint, Iolog]:
    """Replay the trace file on `target` (its first `region_bytes`) and capture it."""
    region = target.size_bytes if region_bytes is None else min(region_bytes, target.size_bytes)
    log = from_trace(trace_path, target.path, region)
    if log.writes and not may_write:
        raise BadInput(f"--replay-trace {trace_path}: the trace writes; add --destroy-data to "
                       f"let its replay write to {target.path}")  # fmt: skip
    run = RunDir.make()
    try:
        path = run.write(log)
        options = replay_options(path, run, log, speed)
        runtime = max(MIN_RUNTIME_S, log.seconds / speed + 1.0)
        text = replay_job(options, runtime)
        found = run_text_captured(text, target, runtime + SLACK_S / 2, writes=log.writes,
                                  trace=trace)  # fmt: skip
    finally:
        run.remove()
    return found, log
