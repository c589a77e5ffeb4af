"""The modelled hardware RAID-5 set (`raid5`): one device whose small writes cost four member
commands and whose full-stripe writes cost no read, counted in the plugin's stats file; its
data; and raid.c's own checks of its parameters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab.conftest import (
    assert_no_server_left,
    cpus_of,
    direct_round_trip,
    module_lab,
    snapshot,
)
from tests.lab.fio import fio_job
from tuner.lab import Lab, lab_down, lab_up, load_spec
from tuner.lab.modelled import SOURCES
from tuner.lab.nbd import PLUGIN_CFLAGS
from tuner.lab.raid import RaidModel, RaidStats, member_commands, read_stats, small_write_s

pytestmark = pytest.mark.lab

KIB, MIB = 1 << 10, 1 << 20


@pytest.fixture(scope="module")
def raid5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    """The built-in `raid5` and its state directory, for the tests that count and stream on
    it: each measures its own requests (the stats as a difference), none needs it fresh."""
    with module_lab(tmp_path_factory, load_spec("raid5")) as shared:
        yield shared


def test_small_writes_cost_four_member_commands_full_stripes_no_read(
    raid5: tuple[Lab, Path],
) -> None:
    lab, where = raid5
    disk = lab.disks[0]
    model = disk.model
    assert isinstance(model, RaidModel)
    assert len(lab.disks) == 1  # the members are no block devices: the controller hides them
    stats = Path(f"/dev/shm/iotuner-lab-{snapshot(where).lab_id}/{disk.name}.stats")

    def counted(rw: str, block: str, depth: int, *extra: str) -> tuple[dict[str, Any], RaidStats]:
        before = read_stats(stats)
        job = fio_job(disk.device, rw, block, depth, 2, *extra, ramp=0)
        return job, read_stats(stats) - before

    stripe = f"{model.full_stripe_bytes // KIB}k"
    reads, _ = counted("randread", "4k", 1)
    small, cost = counted("randwrite", "4k", 1)
    full, whole = counted("write", stripe, 4)
    # The same writes one unit off the stripes' start (lesson stripe-alignment): each now
    # covers the ends of two stripes, both read-modify-written.
    askew, split = counted("write", stripe, 4, f"--offset={model.stripe_kib}k")
    assert member_commands(model, 4 * KIB, 4 * KIB, True) == (2, 2)
    expected_s = small_write_s(model, disk.size_bytes, 4096)  # 23.9 ms
    print(f"4 KiB random writes: {small['iops']:.1f} IOPS, {small['lat_ns']['mean'] / 1e6:.2f} "
          f"ms (model {expected_s * 1e3:.2f}), {cost}; 4 KiB random reads "
          f"{reads['iops']:.1f} IOPS; {stripe} writes: {full['bw_bytes'] / 1e6:.1f} MB/s, "
          f"{whole}; one unit off: {askew['bw_bytes'] / 1e6:.1f} MB/s, {split}")  # fmt: skip
    # Every request reached the set whole (the kernel split none), so the counts are exact.
    assert cost.write_requests == pytest.approx(small["total_ios"], abs=2)
    assert cost.rmw_stripes == cost.write_requests and cost.whole_stripes == 0
    assert sum(cost.member_reads) == sum(cost.member_writes) == 2 * cost.write_requests
    assert whole.write_requests == pytest.approx(full["total_ios"], abs=5)
    assert whole.whole_stripes == whole.write_requests and whole.rmw_stripes == 0
    assert sum(whole.member_reads) == 0
    assert sum(whole.member_writes) == model.members * whole.write_requests
    assert split.whole_stripes == 0 and split.rmw_stripes == 2 * split.write_requests
    assert sum(split.member_reads) > 0 and askew["bw_bytes"] < 0.5 * full["bw_bytes"]
    # In time: a small write waits for the later of two reads, then about a turn for its
    # writes: E[max(R1, R2)] + T, against one member command for a read. Measured 1.016-1.072
    # of the formula (load average up to 7, 80 writes a run); 15 % allowed.
    assert small["lat_ns"]["mean"] / 1e9 == pytest.approx(expected_s, rel=0.15)
    assert small["lat_ns"]["mean"] > 1.5 * reads["lat_ns"]["mean"]


@pytest.mark.lab_parallel  # data and paths, no figure; down checked by path, never by name
def test_the_set_keeps_what_is_written_across_its_units_and_down_removes_it(
    state: Path,
) -> None:
    disk = lab_up(load_spec("raid5")).disks[0]
    record = snapshot(state)
    assert [s.kind for s in record.steps if s.label == disk.name] == ["server", "fuse", "loop"]
    # One server carries every member's bandwidth: it is not held to one CPU as a drive's is.
    for step in record.steps:
        if step.kind in ("server", "fuse"):
            assert cpus_of(int(step.detail["pid"])) == os.sched_getaffinity(0), step
    written = os.urandom(MIB)
    offset = 1000 * MIB + 20 * KIB  # across units, stripes and members, not aligned to them
    assert direct_round_trip(disk.device, offset, written) == written
    lab_down()
    assert_no_server_left(record)  # and with the directory, the data and stats files


def test_streams_whose_parity_splits_a_members_pieces_keep_flowing(
    raid5: tuple[Lab, Path],
) -> None:
    """A 512 KiB piece of a 1 MiB read spans three stripes: a member that holds parity in the
    middle one gets two commands of one request. At depth 8 the drive, freed by the first,
    often chose the second while its owner had already passed it over and waited for a
    wake-up that went to no one, holding the drive: the set stopped for good (hdd_model.h's
    run_commands). fio then cannot even be killed until its I/O ends, so on a hang the test
    kills the server, which fails the I/O, and then fails."""
    lab, where = raid5
    device = lab.disks[0].device
    (server,) = [s for s in snapshot(where).steps if s.kind == "server"]
    for depth in (4, 8, 16, 8, 16):  # the old hang came in 3 of 4 runs of the first three
        reader = subprocess.Popen(
            ["fio", "--name=j", f"--filename={device}", "--rw=read", "--bs=1M",
             f"--iodepth={depth}", "--ioengine=libaio", "--direct=1", "--runtime=2",
             "--time_based", "--size=768M", "--output-format=json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            out, _ = reader.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(int(server.detail["pid"]), signal.SIGKILL)
            reader.kill()
            reader.communicate()
            pytest.fail(f"1 MiB reads at depth {depth} on raid5 stopped flowing")
        read = json.loads(out)["jobs"][0]["read"]
        print(f"depth {depth}: {read['bw_bytes'] / 1e6:.1f} MB/s")
        assert reader.returncode == 0 and read["bw_bytes"] > 100e6


@pytest.mark.lab_parallel  # a hand-run server over a file: no lab, no loop device
@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("level=3", "parameters out of range"),
        ("members=2", "parameters out of range"),  # raid5 needs 3
        ("stripe_kib=2", "parameters out of range"),
        ("bus_mbps=100", "bus_file= and bus_mbps= go together"),
        ("nonsense=1", "unknown parameter 'nonsense'"),
        ("members=3", None),  # and what is in range serves
    ],
)
def test_raid_c_checks_its_parameters_again(
    tmp_path: Path, param: str, message: str | None
) -> None:
    """What reaches nbdkit without the spec's checks (a hand-run server) is refused there too."""
    data = tmp_path / "r.data"
    data.write_bytes(b"")
    os.truncate(data, 256 * MIB)
    cmd = [
        "nbdkit", "-U", "-", "cc", str(SOURCES["raid5"]), PLUGIN_CFLAGS, f"file={data}",
        f"size={256 * MIB}", f"stats={tmp_path / 'r.stats'}", "level=5", param,
        "--run", "true",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if message is None:
        assert done.returncode == 0, done.stderr
        assert read_stats(tmp_path / "r.stats").member_reads == (0, 0, 0)
    else:
        assert done.returncode != 0
        assert message in done.stderr
