"""`--fio-job FILE`: the user's own fio job as a trial workload.

The file is checked by allow-list and then by fio itself (tuner/trials/jobcheck.py); iotuner
keeps the job's I/O options and sets the target, ramp, runtime and output itself. A trial
measures one job: a file with several job sections is refused (numjobs= runs one job several
times in parallel).
"""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

from tuner.errors import BadInput
from tuner.rules.model import Workload
from tuner.trials.jobcheck import load_job


def load_fio_job(path: Path) -> Workload:
    """The job in `path` as a Workload named `fio-job:FILE`; BadInput when it is refused.

    Checked by allow-list before fio sees it, then read as fio reads it (tuner/trials/
    jobcheck.py): the Workload's options are fio's canonical ones (readwrite= is rw=).
    """
    job = load_job(path)
    note = f" (iotuner sets {', '.join(sorted(job.replaced))} itself)" if job.replaced else ""
    return Workload(name=f"fio-job:{path.name}", description=f"{path}{note}", fio=dict(job.options))


def job_options(text: str, where: str) -> dict[str, Any]:
    """[global] and the one job section of a job file, merged (the job's options win).

    Options without a value (`time_based`) map to None, as fio writes them.
    """
    parser = configparser.RawConfigParser(
        allow_no_value=True,
        delimiters=("=",),
        comment_prefixes=("#", ";"),
        inline_comment_prefixes=None,
        strict=False,
        default_section="\x00none",  # [global] is an ordinary section to fio
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # fio keys are exact
    try:
        parser.read_string(text, source=where)
    except configparser.Error as err:
        raise BadInput(f"--fio-job {where}: {str(err).splitlines()[0]}") from None
    jobs = [name for name in parser.sections() if name != "global"]
    if len(jobs) != 1:
        found = ", ".join(jobs) or "none"
        raise BadInput(
            f"--fio-job {where}: {len(jobs)} job sections ({found}); a trial runs exactly one "
            "(use numjobs= for parallel copies)"
        )
    merged: dict[str, Any] = {}
    for section in ("global", jobs[0]):
        if parser.has_section(section):
            merged.update(
                {key.strip(): _value(value) for key, value in parser.items(section, raw=True)}
            )
    return merged


def _value(value: str | None) -> str | None:
    return None if value is None else value.strip()
