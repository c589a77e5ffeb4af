"""Where a read-only job may place its reads on the user's own file: inside it, never past it.

fio "lays out" a regular file whose region reaches past its end, even for a job that only
reads (filesetup.c, extend_file): it unlinks the file, creates it again and fills it, so the
user's data is gone. A region reaches past the end when, for the job's last copy (numjobs - 1
`offset_increment`s on), `offset` plus `size`, or `filesize` (which sets each file's size
whatever `size` says), is larger than the file; `fallocate=`, `pre_read=` and `overwrite=` act
only inside that layout. A job that names the file and also asks for `nrfiles` > 1 makes
fio-named files beside it. Each of these is refused here, before any trial, with one line;
fio also runs every trial that does not write with `--readonly` (fio.py), which refuses the
layout a second time.

Percentages (`size=50%`, `offset=25%`) are of the file, at most 100; fio rounds a percentage's
offset up to a whole block: here up to the largest block a trial may use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tuner.errors import BadInput
from tuner.trials.fio import count, fio_size, largest_size
from tuner.units import human_bytes

_PERCENT = re.compile(r"\s*([0-9]{1,3})\s*%\s*")


def check_placement(
    region: Mapping[str, Any],
    options: Mapping[str, Any],
    file_bytes: int,
    where: str,
    *,
    jobs: int | None = None,
    block: int | None = None,
) -> None:
    """BadInput (one line naming `where` and the option) when a read of `file_bytes` placed
    by `region` (size, offset, offset_increment) and `options` (filesize, nrfiles, numjobs,
    bs) would reach past the end of the file; `jobs` and `block` are the most copies and the
    largest block a trial may use (the search's), else the job's own."""
    why = placement_problem(region, options, file_bytes, jobs=jobs, block=block)
    if why is not None:
        raise BadInput(
            f"{where}: {why}: fio would lay the file out again (unlink, recreate and fill "
            f"it); a trial reads inside the file's {human_bytes(file_bytes)} only"
        )


def placement_problem(
    region: Mapping[str, Any],
    options: Mapping[str, Any],
    file_bytes: int,
    *,
    jobs: int | None = None,
    block: int | None = None,
) -> str | None:
    """Why the placement reaches past `file_bytes` (the option and its value), or None."""
    copies = max(jobs or 0, _whole(options, "numjobs"))
    if _whole(options, "nrfiles") > 1:
        return f"nrfiles={options['nrfiles']} makes files beside the one named"
    filesize = options.get("filesize")
    if filesize is not None:
        try:
            largest = largest_size(filesize)
        except ValueError:
            return f"filesize={filesize} is not a size iotuner can bound"
        if largest > file_bytes:
            return f"filesize={filesize} is larger than the file"
    try:
        size, size_percent = _share(region, "size", file_bytes)
        offset, offset_percent = _share(region, "offset", file_bytes)
        step, step_percent = _share(region, "offset_increment", file_bytes)
    except ValueError as err:
        return str(err)
    start = (offset or 0) + (step or 0) * (copies - 1)
    if offset_percent or step_percent:  # fio rounds such an offset up to a whole block
        unit = max(block or 0, _largest_block(options), 1)
        start = -(-start // unit) * unit
    last = f"offset={region.get('offset', 0)}" + (
        f" + {copies - 1} x offset_increment={region['offset_increment']}"
        if step and copies > 1
        else ""
    )
    if start >= file_bytes and (offset or step):
        return f"{last} starts at or past the end of the file"
    if filesize is not None and start > _smallest(filesize):
        # fio's own refusal ("you need to specify valid offset="), one trial in, otherwise
        return f"{last} starts past filesize={filesize}"
    if size is not None and not size_percent and start + size > file_bytes:
        return f"{last} + size={region['size']} ends past the end of the file"
    return None


def _share(region: Mapping[str, Any], key: str, file_bytes: int) -> tuple[int | None, bool]:
    """A placement option in bytes (None when absent) and whether it was a percentage."""
    value = region.get(key)
    if value is None or str(value).strip() == "":
        return None, False
    text = str(value)
    percent = _PERCENT.fullmatch(text)
    if percent is not None:
        share = int(percent.group(1))
        if share > 100:
            raise ValueError(f"{key}={text} is more than the whole file")
        return file_bytes * share // 100, True
    try:
        return fio_size(text), False
    except ValueError:
        raise ValueError(f"{key}={text} is not a size iotuner can bound") from None


def _smallest(value: Any) -> int:
    parts = [part for part in re.split(r"[-,:/]", str(value)) if part.strip()]
    return min(fio_size(part) for part in parts)


def _largest_block(options: Mapping[str, Any]) -> int:
    found = [_block(options[key]) for key in ("bs", "bsrange", "bssplit") if options.get(key)]
    return max(found, default=4096)


def _block(value: Any) -> int:
    try:
        return largest_size(value)
    except ValueError:
        return 4 << 20  # the largest block the search tries


def _whole(options: Mapping[str, Any], key: str) -> int:
    try:
        return count(options, key)
    except BadInput:
        return 1
