"""Fuzzing what a user names around a --fio-job: the job file's name, and where a read-only
job places its reads on the user's own (small, real) file.

A name is refused in one line, or reaches the trial's job only inside its comment line: no
generated name adds a line (a section, exec_prerun=) of its own. A placement is refused in one
line, or the trial runs; either way the user's file is as it was: content, inode, size, mtime.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tuner.errors import BadInput, IotunerError
from tuner.rules.model import Workload
from tuner.trials.fio import job_text
from tuner.trials.jobfile import load_fio_job
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import run_trial

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
JOB = "[lookup]\nrw=randread\nbs=4k\nioengine=psync\nfilename={data}\n{extra}"
FILE = 64 * 1024
OWN_KEYS = {"rw", "bs", "ioengine", "filename", "runtime", "ramp_time", "time_based",
            "invalidate", "group_reporting", "percentile_list", "size",
            "offset_increment"}  # fmt: skip

_PIECES = ["\n", "\r", "\x1b[31m", "\x00", "\x7f", "[global]", "exec_prerun=touch PWNED",
           "$HOME", "${X}", "$ncpus", ":", "\\:", "[", "]", ";", "#", " ", "é", "\u2028",
           "include x", "a" * 300, ".fio"]  # fmt: skip
_name = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), min_size=1,
                 max_size=6).map("".join)  # fmt: skip


def state(path: Path) -> tuple[str, int, int, int]:
    info = path.stat()
    return (hashlib.sha256(path.read_bytes()).hexdigest(), info.st_ino, info.st_size,
            info.st_mtime_ns)  # fmt: skip


def named_so(name: str, folder: Path) -> None:
    """A job file called `name` in `folder`: refused in one line, or its trial job's lines
    are iotuner's own, the name inside the one comment line."""
    data = folder / "records.dat"
    data.write_bytes(b"r" * FILE)
    safe = name.replace("/", "_").replace("\x00", "_")  # no file name holds these
    safe = f"j{safe}" if safe in ("", ".", "..") else safe
    path = folder / safe
    try:
        path.write_text(JOB.format(data=data, extra=""))
    except OSError as err:
        if err.errno not in (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL):
            raise
        note("the file system takes no such name")
    with within():
        try:
            workload = load_fio_job(path)
        except BadInput as err:
            refused_well(err)
            note("refused")
            return
        text = job_text(workload.fio, runtime_s=1, ramp_s=0, filename=str(data),
                        own_region=workload.region, title=workload.name)  # fmt: skip
    lines = text.split("\n")
    assert lines[0].startswith("; written by iotuner: ") and lines[-1] == "", lines
    assert lines[1] == "[global]" and lines[-2] == "[trial]", lines
    assert {line.partition("=")[0] for line in lines[2:-2]} <= OWN_KEYS, lines
    assert "\r" not in text
    note("accepted, the name only in the comment")


@needs_fio
@FUZZ
@given(_name)
def test_generated_job_file_names(name: str) -> None:
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-") as folder:
        named_so(name, Path(folder))


_SIZE = st.one_of(
    st.sampled_from(["0", "4k", "32k", "60k", "64k", "65537", "128k", "1m", "1g", "16e"]),
    st.integers(0, 4 * FILE).map(str),
    st.integers(0, 150).map(lambda n: f"{n}%"),
)
_region = st.dictionaries(st.sampled_from(["size", "offset", "offset_increment"]), _SIZE)
_extra = st.dictionaries(
    st.sampled_from(
        [
            "filesize",
            "numjobs",
            "nrfiles",
            "fallocate",
            "pre_read",
            "overwrite",
            "create_on_open",
            "bs",
        ]
    ),
    st.sampled_from(
        ["1", "2", "3", "4k", "64k", "1m", "32k-1m", "truncate", "keep", "native", "0"]
    ),
)


def placed_so(region: dict[str, str], extra: dict[str, str], folder: Path) -> None:
    """A read-only trial on a 64 KiB file, placed so: refused in one line or run; the file
    as it was either way, and nothing made beside it."""
    data = folder / "records.dat"
    data.write_bytes(os.urandom(FILE))
    before = state(data)
    target = TrialTarget(path=str(data), devices=(), size_bytes=FILE, writable=False,
                         user_file=True)  # fmt: skip
    workload = Workload(name="fio-job:fuzz.fio", description="",
                        fio={"rw": "randread", "bs": "4k", "ioengine": "psync", **extra},
                        region=region, files=(str(data),))  # fmt: skip
    with within(30):
        try:
            run_trial(target, workload, runtime_s=0.1, ramp_s=0, drop_caches=False)
            note("accepted, the trial ran")
        except BadInput as err:
            refused_well(err)
            note("refused")
        except IotunerError as err:
            # fio's own refusal of a region inside the file (bs larger than it): one line.
            assert "\n" not in str(err), str(err)
            note("fio refused")
    assert state(data) == before, (region, extra)
    assert sorted(p.name for p in folder.iterdir()) == ["records.dat"], (region, extra)


@needs_fio
@FUZZ
@given(_region, _extra)
def test_generated_placements_on_the_users_file(
    region: dict[str, str], extra: dict[str, str]
) -> None:
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-") as folder:
        placed_so(region, extra, Path(folder))


def _replayed(path: Path) -> dict[str, object]:
    """A corpus entry's replay note: its first line, `; replay: {JSON}`."""
    first = path.read_text().split("\n", 1)[0]
    return dict(json.loads(first.removeprefix("; replay: ")))


_REPLAYED = [p for p in corpus("jobs") if p.read_text().startswith("; replay: ")]


@needs_fio
@pytest.mark.parametrize("path", _REPLAYED, ids=lambda p: p.name)
def test_names_and_placements_that_once_failed(path: Path, tmp_path: Path) -> None:
    replay = _replayed(path)
    if "name" in replay:
        named_so(str(replay["name"]), tmp_path)
    else:
        region, extra = replay["region"], replay["extra"]
        assert isinstance(region, dict) and isinstance(extra, dict)
        placed_so(region, extra, tmp_path)
