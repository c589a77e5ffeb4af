"""Production's data set and page cache, and the share of its data a trial may cache."""

from __future__ import annotations

import pytest

from tuner.rules.model import Workload
from tuner.trials.dataset import MIN_CACHE_BYTES, CacheModel, job_data_set
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import _placement, reads_own_region, user_region_bytes

GiB, MiB = 1 << 30, 1 << 20


def test_a_data_set_four_times_the_cache_gives_a_trial_a_quarter_of_its_data() -> None:
    model = CacheModel(data_set_bytes=4 * GiB, cache_bytes=1 * GiB)
    assert model.share == 0.25 and not model.fits
    assert model.limit_for(1 * GiB) == 256 * MiB
    assert "production caches 25% of it" in model.describe()


def test_a_data_set_that_fits_is_measured_as_a_warm_up() -> None:
    model = CacheModel(data_set_bytes=1 * GiB, cache_bytes=22 * GiB)
    assert model.fits and model.share == 1.0
    assert model.limit_for(1 * GiB) is None
    assert "warm-up" in model.describe()


def test_an_unknown_data_set_is_read_once_as_before() -> None:
    model = CacheModel(data_set_bytes=None, cache_bytes=22 * GiB)
    assert model.share == 0.0 and not model.fits and model.limit_for(GiB) is None


def test_a_tiny_share_is_rounded_up_to_what_a_cgroup_can_hold() -> None:
    assert CacheModel(1 << 40, 1 * GiB).limit_for(1 * GiB) == MIN_CACHE_BYTES


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"size": "1g", "numjobs": 2, "filename": "/data/db"}, GiB),  # one shared file
        ({"size": "1g", "numjobs": 2}, 2 * GiB),  # each job its own file
        ({"nrfiles": 4096, "filesize": "64k", "numjobs": 4}, GiB),
        ({"size": "50%"}, None),  # a share of a file iotuner has not seen
        ({"rw": "read"}, None),
        # fio extends one file to filesize: the scratch file (and its free-space check) too
        ({"filesize": "2g"}, 2 * GiB),
        ({"filesize": "1g-2g", "size": "16m"}, 2 * GiB),
        ({"filesize": "400m", "size": "1g", "numjobs": 2}, 2 * GiB),
        ({"nrfiles": 4, "filesize": "1m-2m", "numjobs": 2}, 16 * MiB),
    ],
)
def test_the_data_set_a_job_names(options: dict[str, object], expected: int | None) -> None:
    assert job_data_set(options) == expected


FILE = TrialTarget("/data/db", ("sdb",), 2 * GiB, writable=False, user_file=True)


@pytest.mark.parametrize(
    ("region", "jobs", "expected"),
    [
        ({}, 1, 2 * GiB),
        ({"size": "1g"}, 2, GiB),  # both jobs read the same first GiB
        ({"size": "512m", "offset_increment": "512m"}, 4, 2 * GiB),  # four streams, own quarter
        ({"size": "25%", "offset": "50%"}, 1, 512 * MiB),
        ({"size": "8g"}, 1, 2 * GiB),  # capped at the file
    ],
)
def test_the_part_of_the_users_file_its_jobs_read(
    region: dict[str, str], jobs: int, expected: int
) -> None:
    workload = Workload("fio-job:db.fio", "", {"numjobs": jobs}, region=region)
    assert user_region_bytes(workload, FILE) == expected


def test_a_users_job_on_a_device_is_measured_on_the_part_it_names() -> None:
    # Two mmap readers of the first 256 MiB of a 2 GiB disk: their trials read those 256 MiB,
    # as the job does, not the whole disk (whose quarter could not settle in a trial's ramp).
    disk = TrialTarget("/dev/sdb", ("sdb",), 2 * GiB, writable=False)
    mine = Workload("fio-job:db.fio", "", {"numjobs": 2, "ioengine": "mmap"},
                    region={"size": "256m"})  # fmt: skip
    assert reads_own_region(disk, mine)
    assert user_region_bytes(mine, disk) == 256 * MiB
    placement, region = _placement(disk, mine, dict(mine.fio))
    assert placement == {"filename": "/dev/sdb", "own_region": {"size": "256m"}}
    assert region == 256 * MiB
    # A profile, or a job naming no part: the whole device, one slice per job, as before.
    profile = Workload("random-read", "", {"numjobs": 2})
    assert not reads_own_region(disk, profile)
    assert _placement(disk, profile, dict(profile.fio)) == (
        {"filename": "/dev/sdb", "region_bytes": 2 * GiB}, 2 * GiB)  # fmt: skip
    # A scratch file is iotuner's own: its size, not the job's, places the I/O.
    scratch = TrialTarget("/mnt/x/iotuner.dat", ("sdb",), GiB, writable=True, directory="/mnt/x")
    assert not reads_own_region(scratch, mine)
