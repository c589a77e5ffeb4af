"""`--fio-job FILE`: the user's own fio job as a trial workload.

fio itself judges the file (`fio --parse-only`), so iotuner accepts exactly what fio accepts;
iotuner then keeps the job's I/O options and sets the target, ramp, runtime and output itself
(tuner/trials/fio.py OWN_OPTIONS). A trial measures one job: a file with several job sections
is refused (numjobs= runs one job several times in parallel).
"""

from __future__ import annotations

import configparser
import subprocess
from pathlib import Path
from typing import Any

from tuner.errors import BadInput, IotunerError
from tuner.rules.model import Workload
from tuner.trials.fio import FIO_MISSING, OWN_OPTIONS, count, fio_binary, first_error


def load_fio_job(path: Path) -> Workload:
    """The job in `path` as a Workload named `fio-job:FILE`; BadInput when fio rejects it."""
    if not path.is_file():
        raise BadInput(f"--fio-job {path}: no such file")
    try:
        done = subprocess.run(
            [fio_binary(), "--parse-only", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except FileNotFoundError:
        raise IotunerError(FIO_MISSING) from None
    if done.returncode != 0:
        raise BadInput(f"--fio-job {path}: fio rejects it: {first_error(done.stderr)}")
    options = job_options(path.read_text(), str(path))
    ignored = sorted(key for key in options if key in OWN_OPTIONS)
    fio = {key: value for key, value in options.items() if key not in OWN_OPTIONS}
    for key in ("numjobs", "iodepth", "nrfiles"):
        try:
            count(fio, key)
        except BadInput as err:
            raise BadInput(f"--fio-job {path}: {err}") from None
    note = f" (iotuner sets {', '.join(ignored)} itself)" if ignored else ""
    region = {key: options[key] for key in REGION_OPTIONS if options.get(key) is not None}
    return Workload(name=f"fio-job:{path.name}", description=f"{path}{note}", fio=fio,
                    region=region, files=named_files(options))  # fmt: skip


# Where a job places its I/O in its file; kept for trials that read the user's own file.
REGION_OPTIONS = ("size", "offset", "offset_increment")


def named_files(options: dict[str, Any]) -> tuple[str, ...]:
    """The existing regular files a job names (`filename`, colon-separated, `\\:` a literal
    colon; relative to `directory` when given); names of devices or of files that do not
    exist yet are left out."""
    raw = options.get("filename")
    if not raw:
        return ()
    names = [part.replace("\x00", ":") for part in str(raw).replace("\\:", "\x00").split(":")]
    base = Path(str(options["directory"])) if options.get("directory") else None
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
