"""A fingerprint's reproduction: a fio job the trials' job checks accept, mapping each figure."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.capture.samples import FIXTURES, collect
from tests.cli import iotuner
from tuner.capture.fingerprint import Fingerprint, check, load
from tuner.capture.reproduce import job_text, options, sections
from tuner.capture.workload import capture_workload
from tuner.trials.jobcheck import load_job, load_jobs


@pytest.mark.parametrize("name", ["random-mix", "buffered-streams", "fdatasync"])
def test_every_reproduction_passes_the_job_checks(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.fio"
    path.write_text(job_text(collect(name)[1], 256 << 20))
    jobs = load_jobs(path)  # BadInput if the allow-list or fio itself refused a section
    assert jobs[0].section == ("ext4lazyinit" if name == "fdatasync" else "capture")
    assert any(job.writes for job in jobs) == (name != "buffered-streams")
    path.write_text(job_text(collect(name)[1], 256 << 20, one=True))
    assert load_job(path).section == jobs[0].section  # what a trial runs: one section


def test_a_random_mix_is_random_direct_with_its_sizes_and_its_mix() -> None:
    fp = collect("random-mix")[1]
    dev = fp.busiest()
    assert dev is not None
    found = options(fp, 256 << 20)
    assert found["rw"] == "randrw"
    assert found["rwmixread"] == str(round(100 * dev["read_request_share"]))
    assert found["direct"] == "1" and found["ioengine"] == "libaio"
    reads, writes = found["bssplit"].split(",")
    assert {part.split("/")[0] for part in reads.split(":")} == {"4k", "16k", "64k"}
    assert sum(int(part.split("/")[1]) for part in writes.split(":")) == 100
    # the device was idle most of the time: paced to the captured rates, reads and writes
    read_rate, write_rate = map(int, found["rate_iops"].split(","))
    assert read_rate + write_rate == pytest.approx(dev["iops"], abs=2)
    assert "numjobs" not in found


def test_buffered_streams_are_buffered_sequential_readers_one_job_each() -> None:
    found = options(collect("buffered-streams")[1])
    assert (found["rw"], found["direct"], found["ioengine"], found["numjobs"]) == (
        "read", "0", "psync", "2"
    )  # fmt: skip
    assert "size" not in found  # no region given


def test_writes_with_flushes_sync_as_the_capture_did() -> None:
    """fio's 8 KiB buffered writes, fdatasync every 4 (32 KiB a sync), on ext4: the flushes
    were issued by kblockd's workers (kworker/N:MH), beside jbd2's commits and ext4lazyinit.
    The old mixture synced every 56 writes of 4 KiB (224 KiB a sync); the writer's own
    section syncs every 32 KiB, as the device saw it, and jbd2 commits as its own section."""
    fp = collect("fdatasync")[1]
    mixture = options(fp)
    assert int(mixture["fdatasync"]) * 4096 == 224 << 10  # the fault, kept for the trials
    by_name = {part.name: part.options for part in sections(fp)}
    assert "kworker_0_2H" not in by_name  # a dispatcher is not a workload
    fio = by_name["fio"]
    assert (fio["rw"], fio["direct"]) == ("write", "0")
    per_sync = int(fio["bs"].removesuffix("k")) * 1024 * int(fio["fdatasync"])
    assert per_sync == 32 << 10
    assert by_name["jbd2_loop11-8"]["fdatasync"] == "1"


def test_the_region_bounds_the_footprint() -> None:
    fp = collect("random-mix")[1]
    assert options(fp, 8 << 20)["size"] == "8m"
    dev = fp.busiest()
    assert dev is not None
    assert options(fp, 1 << 40)["size"] == f"{dev['footprint_bytes'] >> 20}m"


def test_the_command_writes_the_job(tmp_path: Path) -> None:
    source = tmp_path / "fp.json"
    source.write_text(collect("random-mix")[1].to_json())
    out = tmp_path / "job.fio"
    done = iotuner("capture", "--reproduce", str(source), "--region", "64M", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "[capture]" in out.read_text() and "size=" in out.read_text()
    bad = iotuner("capture", "--reproduce", str(source), "--region", "lots")
    assert bad.returncode == 2 and "--region" in bad.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("capture",),
        ("capture", "--region", "1G", "--device", "loop0"),
        ("capture", "--against", "x.json", "--device", "loop0"),
        ("capture", "--device", "/nonexistent"),
        ("capture", "--device", "/dev/null"),
        ("capture", "--check", "x.fio", "--device", "loop0", "--device", "loop1"),
        ("capture", "--target", "/tmp"),
        ("capture", "--check", "x.fio", "--target", "/tmp", "--device", "loop0"),
        ("capture", "--check", "x.fio", "--target", "/tmp", "--destroy-data"),
    ],
)
def test_wrong_arguments_are_refused_in_one_line(args: tuple[str, ...]) -> None:
    done = iotuner(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1


def test_tune_takes_a_fingerprint_as_its_workload_only(tmp_path: Path) -> None:
    source = tmp_path / "fp.json"
    source.write_text(collect("buffered-streams")[1].to_json())
    both = iotuner("tune", "--capture", str(source), "--workload", "stream-read")
    assert both.returncode == 2 and "--capture is the workload" in both.stderr
    source.write_text("{}")
    bad = iotuner("tune", "--capture", str(source), "--target", str(tmp_path))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "fp.json" in bad.stderr


def test_a_direction_without_sizes_still_reproduces() -> None:
    """A fingerprint that passes the allow-list with reads but no read size bucket (edited by
    hand, or every bucket rounded to 0) gives a job, not a traceback."""
    doc = dict(collect("random-mix")[1].data)
    doc["devices"] = [dict(doc["devices"][0], sizes={"read": {}, "write": {}})]
    found = options(check(doc, "edited.json"))
    assert found["bssplit"] == "4k/100,4k/100"


def test_random_buffered_readers_are_as_many_jobs_as_their_depth() -> None:
    """pgbench -S through the page cache: random 8 KiB reads flagged readahead, four clients
    keeping 3.84 in flight; one synchronous job would keep one."""
    doc = copy.deepcopy(dict(collect("random-mix")[1].data))
    dev = doc["devices"][0]
    dev["cache"]["readahead_share"] = 1.0
    dev["queue_depth"] = {"mean": 3.84, "p95": 6, "max": 8}
    dev["read_request_share"] = dev["read_share"] = 1.0
    found = options(check(doc, "pgbench.json"))
    assert (found["rw"], found["direct"], found["numjobs"]) == ("randread", "0", "4")


def _recorded(name: str) -> Fingerprint:
    """A fingerprint recorded in the capture benchmark's lab (tests/fixtures/capture/NAME.json):
    tar-backup four `tar | cat` readers of 192 MiB files on xfs, captured 36 s (xfs's log
    wrote three requests once they had read); pgbench-select `pgbench -S -c 4` on a 300 MB
    database in a 160 MiB memory cgroup, 20 s."""
    return load(FIXTURES / f"{name}.json")


def test_a_file_systems_log_is_not_a_writer_in_every_reader(tmp_path: Path) -> None:
    """Four tar readers and xfs's log (three flushed writes among 6,144 requests): the old
    single mixture made every reader a writer syncing every write (rw=rw, rwmixread=99,
    fdatasync=1: the tune under-claimed the backup's gain by it); the readers' own section
    reads, buffered, four streams, and the log is named as left out."""
    found = _recorded("tar-backup")
    assert options(found)["fdatasync"] == "1"  # the device's figures as one mixture
    parts = sections(found, 800 << 20)
    assert [(p.name, p.comm) for p in parts] == [("tar", "tar")]
    tar = parts[0].options
    assert (tar["rw"], tar["direct"], tar["numjobs"], tar["bs"]) == ("read", "0", "4", "128k")
    assert "fdatasync" not in tar and "rwmixread" not in tar
    text = job_text(found, 800 << 20)
    assert "# left out: 3 process groups (xfsaild/loop1, kworker/0:2H, kworker/1:2H)" in text
    path = tmp_path / "backup.fio"
    path.write_text(text)
    assert [(job.section, job.writes) for job in load_jobs(path)] == [("tar", False)]


def test_the_logs_flushes_sync_no_more_writes_than_were_synced() -> None:
    """pgbench -S: the backends wrote 2 synced requests among 2,442; kblockd's workers sent 4
    flushes (xfs's log). The old mixture synced every 2 writes of the whole device's; the
    backends' section takes at most one flush a synced write of theirs and keeps their
    random buffered 8 KiB reads four deep."""
    found = _recorded("pgbench-select")
    assert options(found)["fdatasync"] == "1"  # 3.5 of the device's writes a flush, 4 jobs
    (postgres,) = sections(found)
    assert postgres.comm == "postgres" and postgres.options["fdatasync"] == "1"
    # fio's default would advise a random job random, which postgres does not
    assert postgres.options["fadvise_hint"] == "0"
    assert (postgres.options["rw"], postgres.options["numjobs"]) == ("randrw", "4")
    assert postgres.options["bssplit"].split(",")[0] == "8k/100"


def _job_read_share(found: dict[str, str]) -> float:
    """The share of bytes a buffered random mix of `found`'s options reads: fio picks each
    request's direction by rwmixread, and its size from that direction's split."""

    def mean(split: str) -> float:
        parts = [part.split("/") for part in split.split(":")]
        sizes = [int(size.removesuffix("k")) * 1024 if size.endswith("k") else int(size)
                 for size, _ in parts]  # fmt: skip
        return sum(size * int(p) / 100 for size, (_, p) in zip(sizes, parts, strict=True))

    reads, writes = found["bssplit"].split(",")
    share = int(found["rwmixread"]) / 100
    return share * mean(reads) / (share * mean(reads) + (1 - share) * mean(writes))


def test_a_databases_wal_writes_keep_their_own_size() -> None:
    """pgbench TPC-B-like (tests/fixtures/capture/pgbench-tpcb.json: PostgreSQL 15, scale
    20, 160 MiB cgroup, 20 s on the hdd spec): the backends read 8 KiB pages and wrote WAL
    appends of 16 and 32 KiB (57 % and 34 % of their writes), 0.44 of their bytes read. The
    old reproduction wrote at the reads' 8 KiB, so read 0.72 of its bytes; the writes now
    keep their histogram, and the job reads the captured share within 5 %."""
    found = _recorded("pgbench-tpcb")
    (postgres,) = sections(found)
    options = dict(postgres.options)
    assert "bs" not in options
    reads, writes = options["bssplit"].split(",")
    assert reads == "8k/100"
    # within their buckets: 24 KiB stands for 16-31 KiB's WAL writes, not their floor
    assert [part.split("/")[0] for part in writes.split(":")] == ["12k", "24k", "44k"]
    # 3.02 in flight from synchronous callers: four of them at least, not round()'s three
    # (which kept 2.1 in the check)
    assert options["numjobs"] == "4"
    group = found.busiest()["by_process"][0]  # type: ignore[index]
    assert _job_read_share(options) == pytest.approx(group["read_share"], rel=0.05)


def test_tune_runs_the_busiest_groups_section() -> None:
    """A trial runs one job section: `tune --capture` gets the readers', not the mixture."""
    workload, _ = capture_workload(FIXTURES / "tar-backup.json")
    assert workload.fio["rw"] == "read" and "fdatasync" not in workload.fio


def test_a_buffered_reader_advises_the_kernel_as_the_application_did() -> None:
    """fio's default fadvise_hint=1 advises a sequential job sequential, which doubles the
    kernel's readahead window: the old reproduction of four tar readers (128 KiB windows at
    read_ahead_kb 128, recorded with the device's readahead in tar-backup-ra) read 256 KiB
    requests, a 99.7 % size difference in the capture benchmark. tar does not advise: 0. A
    reader whose windows were twice the device's readahead did (sha256sum): sequential. A
    fingerprint without the device's readahead: 0, what most readers do."""
    found = load(FIXTURES / "tar-backup-ra.json")
    dev = found.busiest()
    assert dev is not None and dev["read_ahead_kb"] == 128
    (tar,) = sections(found)
    assert tar.options["fadvise_hint"] == "0"
    doc = copy.deepcopy(dict(found.data))
    doc["devices"][0]["read_ahead_kb"] = 64  # windows of 128 KiB: twice the readahead
    (advised,) = sections(check(doc, "advised.json"))
    assert advised.options["fadvise_hint"] == "sequential"
    (unknown,) = sections(_recorded("tar-backup"))
    assert unknown.options["fadvise_hint"] == "0"
