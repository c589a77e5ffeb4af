"""A fingerprint's reproduction: a fio job the trials' job checks accept, mapping each figure."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.capture.samples import collect
from tests.cli import iotuner
from tuner.capture.fingerprint import check
from tuner.capture.reproduce import job_text, options
from tuner.trials.jobcheck import load_job


@pytest.mark.parametrize("name", ["random-mix", "buffered-streams", "fdatasync"])
def test_every_reproduction_passes_the_job_checks(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.fio"
    path.write_text(job_text(collect(name)[1], 256 << 20))
    job = load_job(path)  # BadInput if the allow-list or fio itself refused it
    assert job.section == "capture"
    assert job.writes == (name != "buffered-streams")


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
    found = options(collect("fdatasync")[1])
    assert found["rw"] == "write"
    assert found["direct"] == "0"
    assert int(found["fdatasync"]) >= 1


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
