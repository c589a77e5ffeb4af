"""A job run on a trial target while its devices are captured: the reproduction's own
fingerprint, for `capture --check` and for the fidelity `tune --capture` names."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from tuner.capture.fingerprint import Fingerprint
from tuner.capture.session import capture, device
from tuner.errors import IotunerError
from tuner.trials.fio import job_comment, job_text, run_fio
from tuner.trials.targets import TrialTarget

ALIGN = 1 << 20
"""Sections start on whole MiB: no two share a page, a block or a readahead window's start."""
SLACK_S = 30.0
"""How much longer than the job the capture may wait for fio to end (start-up, the flush)."""


def run_captured(
    options: Mapping[str, Any],
    target: TrialTarget,
    seconds: float,
    *,
    region_bytes: int | None = None,
    writes: bool = False,
    trace: BinaryIO | None = None,
) -> Fingerprint:
    """Run the job `options` on `target` for `seconds` (fio started once the capture records)
    and return the capture of the target's devices, which ends when fio does."""
    region = target.size_bytes if region_bytes is None else min(region_bytes, target.size_bytes)
    text = job_text(dict(options), runtime_s=seconds, ramp_s=0.0, filename=target.path,
                    region_bytes=region, title="capture check")  # fmt: skip
    return run_text_captured(text, target, seconds, writes=writes, trace=trace)


def run_sections_captured(
    sections: Sequence[tuple[str, Mapping[str, Any], int | None]],
    target: TrialTarget,
    seconds: float,
    *,
    writes: bool = False,
    trace: BinaryIO | None = None,
) -> Fingerprint:
    """Run several job sections (name, options, region bytes or None) side by side on
    `target`, each in its own part of it, while its devices are captured: a reproduction of
    a workload of several process groups (tuner/capture/reproduce.py sections)."""
    return run_text_captured(sections_text(sections, target, seconds), target, seconds,
                             writes=writes, trace=trace)  # fmt: skip


def sections_text(
    sections: Sequence[tuple[str, Mapping[str, Any], int | None]],
    target: TrialTarget,
    seconds: float,
) -> str:
    """The job file of `sections` on `target`: each is the job a trial would run on its own
    region (tuner/trials/fio.py job_text), placed after the one before (offset=), so the
    groups touch apart what they touched apart. A section without a region gets an equal
    share of what the others leave; regions past the target's end shrink in proportion."""
    named = sum(r for _, _, r in sections if r is not None)
    free = max(0, target.size_bytes - named)
    unnamed = sum(1 for _, _, r in sections if r is None)
    regions = [r if r is not None else free // max(1, unnamed) for _, _, r in sections]
    scale = min(1.0, target.size_bytes / max(1, sum(regions)))
    lines = [job_comment(f"capture check, {len(sections)} sections")]
    offset = 0
    for name, options, region in zip((n for n, _, _ in sections), (o for _, o, _ in sections),
                                     regions, strict=True):  # fmt: skip
        share = int(region * scale) // ALIGN * ALIGN
        if share < ALIGN:
            raise IotunerError(f"{target.path}: too small for {len(sections)} job sections")
        text = job_text(dict(options), runtime_s=seconds, ramp_s=0.0, filename=target.path,
                        region_bytes=share, title="capture check")  # fmt: skip
        body = [ln for ln in text.splitlines() if ln and ln[0] not in "[;#"]
        lines += [f"[{name}]", *body, f"offset={offset}"]
        offset += share
    return "\n".join(lines) + "\n"


def run_text_captured(
    text: str,
    target: TrialTarget,
    seconds: float,
    *,
    writes: bool = False,
    trace: BinaryIO | None = None,
) -> Fingerprint:
    """Run the job file `text` (iotuner's own: a trial's or a replay's) on `target`'s
    devices while they are captured; the capture ends when fio does."""
    devices = [device(f"/dev/{name}") for name in target.devices]
    failure: list[BaseException] = []
    done = threading.Event()

    def fio() -> None:
        try:
            run_fio(text, timeout_s=seconds + SLACK_S, what=target.path, devices=target.devices,
                    may_write=writes)  # fmt: skip
        except BaseException as err:  # handed to the caller's thread below
            failure.append(err)
        finally:
            done.set()

    worker = threading.Thread(target=fio, name="iotuner-check-fio", daemon=True)
    try:
        found = capture(devices, seconds + SLACK_S, trace=trace, stop=done.is_set,
                        ready=worker.start)  # fmt: skip
    finally:
        if worker.is_alive():
            worker.join()
    if failure:
        err = failure[0]
        raise err if isinstance(err, IotunerError) else IotunerError(f"fio failed: {err}")
    return found
