"""A fingerprint as a tune's workload (`iotuner tune --capture FILE`), and its fidelity.

The reproduction is written as a fio job file and read back through the same checks a user's
`--fio-job` passes (tuner/trials/jobfile.py): allow-list, then fio's own reading. Before the
search, the job runs briefly on the trial target while the target's devices are captured;
the differences from the original fingerprint are the tune's fidelity, saved and shown with
its result, so a claim made on a poor reproduction says so.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from tuner.capture.check import run_captured
from tuner.capture.compare import TOLERANCE, application, compare, fidelity
from tuner.capture.fingerprint import Fingerprint, load
from tuner.capture.reproduce import job_text
from tuner.rules.model import Workload
from tuner.trials.fio import writes
from tuner.trials.jobfile import load_fio_job
from tuner.trials.targets import TrialTarget

CHECK_S = 5.0
"""The fidelity check's length: a few seconds hold thousands of requests on a disk."""


def capture_workload(path: Path) -> tuple[Workload, Fingerprint]:
    """The reproduction of the fingerprint in `path`, checked as any --fio-job is."""
    found = load(path)
    name = "".join(c if c.isascii() and c.isprintable() else "?" for c in path.name)[:80]
    with tempfile.TemporaryDirectory(prefix="iotuner-capture-") as tmp:
        job = Path(tmp, "reproduction.fio")
        # A trial runs one job section: the busiest process group's (the others are named
        # in the job's comment and their absence shows in the fidelity).
        # Its size= is the captured footprint (the device's size bounds it), so a scratch
        # target is the data set the workload touched and --cache-memory weighs against it,
        # not the default scratch file's 1 GiB.
        dev = found.busiest()
        region = dev["size_bytes"] if dev and dev["size_bytes"] else None
        job.write_text(job_text(found, region, title=name, one=True, per_job=True))
        workload = load_fio_job(job)
    return replace(workload, name=f"capture:{name}",
                   description=f"the reproduction of {name} (iotuner capture)"), found  # fmt: skip


def measure_fidelity(
    found: Fingerprint, workload: Workload, target: TrialTarget, seconds: float = CHECK_S
) -> dict[str, Any]:
    """The reproduction captured on `target`, side by side with `found`: the document a tune's
    result holds under "capture" (fidelity, tolerance, each statistic's row)."""
    again = run_captured(workload.fio, target, seconds, writes=writes(workload.fio))
    # The trial runs the busiest group's section: held to that group's figures.
    rows = compare(application(found, one=True), again)
    return {
        "fingerprint": found.where,
        "fidelity": round(fidelity(rows), 4),
        "tolerance": TOLERANCE,
        "rows": [asdict(row) for row in rows],
    }
