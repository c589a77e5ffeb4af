"""A read-only job on the user's own file reads inside it: a region past its end is refused.

fio lays out (unlinks, recreates and fills) a regular file whose job region reaches past its
end, even for rw=randread. Each way to reach past it is tried on a real file, through
run_trial, and must be refused in one line with the file as it was: content, inode, mtime.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.common import refused_well
from tuner.errors import BadInput, IotunerError
from tuner.rules.model import Workload
from tuner.trials.placement import placement_problem
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import run_trial

KiB = 1024
FILE = 256 * KiB


def state(path: Path) -> tuple[str, int, int, int]:
    """What a user would notice of the file: its content, inode, size and mtime."""
    info = path.stat()
    return (hashlib.sha256(path.read_bytes()).hexdigest(), info.st_ino, info.st_size,
            info.st_mtime_ns)  # fmt: skip


def users_file(tmp_path: Path) -> Path:
    path = tmp_path / "records.dat"
    path.write_bytes(os.urandom(FILE))
    return path


PAST_THE_END: list[tuple[dict[str, str], dict[str, Any]]] = [
    ({"size": "1m"}, {}),
    ({"size": "64k", "offset": "240k"}, {}),
    ({"offset": "1m"}, {}),
    ({"size": "64k", "offset_increment": "128k"}, {"numjobs": "3"}),
    ({}, {"filesize": "1m"}),
    ({}, {"filesize": "64k-1m"}),
    ({"size": "1m"}, {"fallocate": "truncate"}),
    ({"size": "1m"}, {"fallocate": "keep"}),
    ({"size": "1m"}, {"fallocate": "native"}),
    ({"size": "1m"}, {"pre_read": "1"}),
    ({"size": "1m"}, {"overwrite": "1"}),
    ({"size": "1m"}, {"create_on_open": "0"}),
    ({"size": "64k"}, {"nrfiles": "3"}),
    ({"size": "64k", "offset": "90%"}, {}),
    ({"size": "64k", "offset_increment": "50%"}, {"numjobs": "3"}),
    ({"size": "200%"}, {}),
    ({"offset": "100%"}, {}),
    ({"offset": "128k"}, {"filesize": "64k"}),  # inside the file, past the size fio gives it
]


@pytest.mark.parametrize(("region", "extra"), PAST_THE_END, ids=repr)
def test_a_read_past_the_end_of_the_users_file_is_refused_and_the_file_kept(
    tmp_path: Path, region: dict[str, str], extra: dict[str, Any]
) -> None:
    data = users_file(tmp_path)
    before = state(data)
    target = TrialTarget(path=str(data), devices=(), size_bytes=FILE, writable=False,
                         user_file=True)  # fmt: skip
    workload = Workload(name="fio-job:lookup.fio", description="",
                        fio={"rw": "randread", "bs": "4k", "ioengine": "psync", **extra},
                        region=region, files=(str(data),))  # fmt: skip
    message = None
    try:
        run_trial(target, workload, runtime_s=0.2, ramp_s=0)
    except BadInput as err:
        message = refused_well(err)
    except IotunerError:
        pass  # fio failed: what counts is the file
    assert state(data) == before, "the user's file was laid out again"
    assert message is not None and message.startswith(f"{data}: "), message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.dat"]


@pytest.mark.parametrize(
    ("region", "extra"),
    [({}, {}), ({"size": "128k", "offset": "128k"}, {}), ({"size": "50%", "offset": "50%"}, {}),
     ({"size": "64k", "offset_increment": "64k"}, {"numjobs": "4"}), ({}, {"filesize": "256k"}),
     ({"size": "100%"}, {"bs": "4k"})],
    ids=repr,
)  # fmt: skip
def test_a_region_inside_the_file_is_accepted(
    region: dict[str, str], extra: dict[str, Any]
) -> None:
    assert placement_problem(region, {"rw": "randread", **extra}, FILE) is None


def test_the_search_bounds_the_region_too() -> None:
    """--app-params may try 8 jobs: a region that 2 fit in is refused for all 8."""
    region = {"size": "64k", "offset_increment": "64k"}
    assert placement_problem(region, {"numjobs": "2"}, FILE) is None
    why = placement_problem(region, {"numjobs": "2"}, FILE, jobs=8)
    assert why is not None and "7 x offset_increment=64k" in why
