"""A user's fio job judged by what it does: the built-in profiles whose rules concern it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuner.rules.installed import load_rule_base
from tuner.trials.jobfile import load_fio_job
from tuner.trials.jobkind import judge

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")

# (fio's canonical options, the profiles judged, the words of the judgement)
TABLE: list[tuple[dict[str, str | None], tuple[str, ...], str]] = [
    # sequential readers through the page cache: one, then several on one disk
    ({"rw": "read", "bs": "16k"}, ("stream-read",), "1 buffered sequential reader"),
    ({"rw": "read", "bs": "64k", "numjobs": "12", "direct": "0", "ioengine": "psync"},
     ("concurrent-streams",), "12 buffered sequential readers"),
    ({"rw": "read", "numjobs": "3", "buffered": "1"},
     ("concurrent-streams",), "3 buffered sequential readers"),
    # direct sequential readers: the write-once-read-many scans
    ({"rw": "read", "bs": "1M", "iodepth": "4", "numjobs": "4", "direct": "1"},
     ("write-once-read-many",),
     "4 direct sequential readers, 4 requests of 1.0 MiB in flight each"),
    ({"rw": "read", "buffered": "0"}, ("write-once-read-many",), "1 direct sequential reader"),
    # random readers, whatever the engine: the memory-mapped one is the readahead trap
    ({"rw": "randread", "bs": "4k", "ioengine": "mmap", "fadvise_hint": "0", "numjobs": "2"},
     ("random-read",), "2 buffered memory-mapped random readers"),
    ({"rw": "randread", "iodepth": "32", "direct": "1", "ioengine": "libaio"},
     ("random-read",), "1 direct random reader"),
    ({"rw": "read", "percentage_random": "100"}, ("random-read",), "1 buffered random reader"),
    # writers: streaming through the cache, random ones that reach the disk at once
    ({"rw": "write", "bs": "1M", "end_fsync": "1"},
     ("stream-write",), "1 buffered sequential writer"),
    ({"rw": "write", "fsync": "64"}, ("stream-write",), "1 buffered sequential writer"),
    ({"rw": "randwrite", "numjobs": "8", "direct": "1", "sync": "1"},
     ("random-write",), "8 direct random writers, synced on every write"),
    ({"rw": "randwrite", "fdatasync": "1"}, ("random-write",),
     "1 random writer, synced on every write"),
    # many small files per job
    ({"rw": "read", "bs": "64k", "filesize": "64k", "nrfiles": "4096", "numjobs": "4"},
     ("small-files",), "4 readers of 4096 files of 64.0 KiB"),
    # mixed jobs: each direction judged on its own, the share in words
    ({"rw": "randrw", "rwmixread": "70", "bs": "8k", "direct": "1", "numjobs": "4"},
     ("random-read", "random-write"),
     "4 direct random readers and 4 direct random writers (70 % of requests read)"),
    ({"rw": "rw", "numjobs": "2"}, ("concurrent-streams", "stream-write"),
     "2 buffered sequential readers and 2 buffered sequential writers (50 % of requests read)"),
    ({"rw": "readwrite", "rwmixwrite": "0"}, ("stream-read",),
     "1 buffered sequential reader (100 % of requests read)"),
    ({"rw": "randrw", "rwmixread": "100"}, ("random-read",),
     "1 buffered random reader (100 % of requests read)"),
    # jobs that resemble no profile
    ({"rw": "read", "percentage_random": "30"}, (),
     "partly random, partly sequential offsets (percentage_random)"),
    ({"rw": "trim"}, (), "rw=trim trims, which no profile does"),
    ({"rw": "write", "direct": "1"}, (),
     "1 sequential writer (direct), which no profile stands for"),
    ({"rw": "write", "fsync": "1"}, (),
     "1 sequential writer (synced on every write), which no profile stands for"),
    ({"rw": "randwrite", "numjobs": "2"}, (),
     "2 random writers left to writeback (no profile writes at random through the cache)"),
]  # fmt: skip


@pytest.mark.parametrize(("options", "profiles", "why"), TABLE)
def test_a_job_is_judged_by_what_it_does(
    options: dict[str, str | None], profiles: tuple[str, ...], why: str
) -> None:
    judgement = judge(options)
    assert (judgement.profiles, judgement.why) == (profiles, why)


def test_every_profile_judged_is_a_built_in_one() -> None:
    names = {w.name for w in load_rule_base().workloads}
    judged = {name for _, profiles, _ in TABLE for name in profiles}
    assert judged <= names
    # Every family of the built-in profiles but the network transfer is reached from a job.
    assert names - judged == {"disk-to-network"}


def test_the_judgement_reads_as_the_result_says_it() -> None:
    assert judge({"rw": "read", "numjobs": "12"}).line() == (
        "judged as concurrent-streams: 12 buffered sequential readers"
    )
    assert judge({"rw": "trim"}).line() == (
        "judged as no built-in profile: rw=trim trims, which no profile does"
    )


@needs_fio
def test_a_loaded_job_carries_its_judgement(tmp_path: Path) -> None:
    # readwrite= is fio's alias: the judgement is of fio's own reading of the job.
    path = tmp_path / "streams.fio"
    path.write_text("[streams]\nreadwrite=read\nbs=64k\nnumjobs=12\ndirect=0\n"
                    "size=170m\noffset_increment=170m\nfilename=/dev/sda\n")  # fmt: skip
    workload = load_fio_job(path)
    assert workload.name == "fio-job:streams.fio"
    assert workload.resembles == ("concurrent-streams",)
    assert workload.judged == "judged as concurrent-streams: 12 buffered sequential readers"


# What each family of the unseen benchmark's drawn jobs (tuner/lab/generate_jobs.py) may be
# judged as: streams as the streaming profiles, random readers never as one of them.
DRAWN = {
    "sequential-streams": {("stream-read",), ("concurrent-streams",), ("write-once-read-many",)},
    "random-readers": {("random-read",)},
    "oltp": {("random-read",), ("random-read", "random-write")},
    "log-appender": {()},
    "small-files": {("small-files",)},
    "write-once-read-many": {("stream-read",), ("concurrent-streams",),
                             ("write-once-read-many",)},
}  # fmt: skip


@pytest.mark.parametrize("family", sorted(DRAWN))
def test_drawn_jobs_are_judged_as_their_family(family: str) -> None:
    from tuner.lab.generate import draw_environment
    from tuner.lab.generate_jobs import draw_workload
    from tuner.trials.jobcheck import check_job

    judged = set()
    for seed in range(40):
        work = draw_workload(seed, draw_environment(seed), family)
        if work.job:  # a network environment draws the built-in transfer instead
            job = check_job(work.job_text(dev="/dev/loop9", mnt="/mnt"), f"seed {seed}")
            judged.add(judge(job.options).profiles)
    assert judged and judged <= DRAWN[family]
