"""`--fio-job FILE`: the user's own fio job as a trial workload.

The file is checked by allow-list and then by fio itself (tuner/trials/jobcheck.py); iotuner
keeps the job's I/O options and sets the target, ramp, runtime and output itself. A trial
measures one job: a file with several job sections is refused (numjobs= runs one job several
times in parallel).
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner.errors import BadInput
from tuner.rules.model import Workload
from tuner.trials.jobcheck import load_job
from tuner.trials.jobkind import judge


def load_fio_job(path: Path) -> Workload:
    """The job in `path` as a Workload named `fio-job:FILE`; BadInput when it is refused.

    Checked by allow-list before fio sees it, then read as fio reads it (tuner/trials/
    jobcheck.py): the Workload's options are fio's canonical ones (readwrite= is rw=). Where
    the job places its I/O (size, offset, offset_increment) and the existing files it names
    are kept apart: a read-only job's trials read those files so. The job is judged by what
    it does (tuner/trials/jobkind.py): the rules of the built-in profiles it resembles concern
    it as they concern those profiles.
    """
    if not str(path).isprintable():
        # A name from a glob or tab completion: nobody reads it for newlines and sections.
        raise BadInput(f"--fio-job {str(path)!r}: the file's name holds a control character; "
                       "rename the file")  # fmt: skip
    job = load_job(path)
    note = f" (iotuner sets {', '.join(sorted(job.replaced))} itself)" if job.replaced else ""
    region = {key: job.placement[key] for key in REGION_OPTIONS if key in job.placement}
    judgement = judge(job.options)
    return Workload(name=f"fio-job:{path.name}", description=f"{path}{note}",
                    fio=dict(job.options), region=region, files=named_files(job.placement),
                    resembles=judgement.profiles, judged=judgement.line())  # fmt: skip


# Where a job places its I/O in its file; kept for trials that read the user's own file.
REGION_OPTIONS = ("size", "offset", "offset_increment")


def named_files(placement: Mapping[str, str]) -> tuple[str, ...]:
    """The existing regular files a job names (`filename`, colon-separated, `\\:` a literal
    colon; relative to `directory` when given); names of devices or of files that do not
    exist yet are left out."""
    raw = placement.get("filename")
    if not raw:
        return ()
    names = [part.replace("\x00", ":") for part in raw.replace("\\:", "\x00").split(":")]
    base = Path(placement["directory"]) if placement.get("directory") else None
    found = []
    for name in names:
        candidate = Path(name) if base is None or Path(name).is_absolute() else base / name
        if name and candidate.is_file():
            found.append(str(candidate))
    return tuple(found)


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
