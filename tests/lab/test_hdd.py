"""The modelled hard disk served by nbdkit: its timing against the model's formulas, its data,
and `lab down` after its server or `lab up` was killed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.cli import iotuner
from tests.lab.conftest import (
    assert_no_server_left,
    direct_round_trip,
    kill_9_up_when,
    module_lab,
    snapshot,
)
from tests.lab.fio import fio_job as fio
from tuner.lab import LabDisk, lab_down, lab_up, load_spec, parse_spec
from tuner.lab.hdd import random_read_s, stream_mbps
from tuner.lab.queue import read_queue
from tuner.tunables.access import Tunables

pytestmark = pytest.mark.lab

MIB = 1 << 20


@pytest.mark.parametrize("queue_depth", [32, 1])
def test_random_reads_gain_from_the_drives_queue_only(state: Path, queue_depth: int) -> None:
    spec = parse_spec(
        f"disks: [{{name: d0, size: 2GiB, model: {{kind: hdd, queue_depth: {queue_depth}}}}}]",
        "x",
        "x",
    )
    device = lab_up(spec).disks[0].device
    alone = fio(device, "randread", "4k", 1, 3)["iops"]
    queued = fio(device, "randread", "4k", 8, 3)["iops"]
    print(f"drive queue {queue_depth}: 4 KiB random reads at depth 1 {alone:.1f} IOPS, "
          f"at depth 8 {queued:.1f} IOPS")  # fmt: skip
    if queue_depth > 1:  # shortest positioning first among 8: 129 IOPS simulated
        assert queued > 1.35 * alone
    else:  # first come, first served: only the command overhead hides
        assert queued == pytest.approx(alone, rel=0.1)


@pytest.mark.lab_parallel  # data and paths, no figure; down checked by path, never by name
def test_what_is_written_is_read_back_and_kept_in_its_data_file(state: Path) -> None:
    lab = lab_up(load_spec("hdd"))
    disk = lab.disks[0]
    name = Path(disk.device).name
    assert Path(f"/sys/block/{name}/loop/dio").read_text().strip() == "1"
    queue = read_queue(Tunables(), disk.device)
    assert (queue["rotational"], queue["scheduler"]) == ("1", "mq-deadline")
    status = iotuner("lab", "status", "--json")
    assert status.returncode == 0, status.stdout
    shown = json.loads(status.stdout)
    assert shown["lab"]["disks"][0]["model"]["rpm"] == 7200
    # The lab's run directory, bind-mounted shared (so a namespace's copy of a mount under it
    # follows our unmount, tuner/lab/build.py), then the disk's server, FUSE file and loop device.
    assert [p["kind"] for p in shown["parts"]] == ["mount", "server", "fuse", "loop"]
    assert all(p["present"] for p in shown["parts"])
    record = snapshot(state)
    data_file = Path(f"/dev/shm/iotuner-lab-{record.lab_id}/{disk.name}.data")

    written = os.urandom(MIB)
    offset = 777 * MIB
    assert direct_round_trip(disk.device, offset, written) == written
    with open(data_file, "rb") as backing:
        backing.seek(offset)
        assert backing.read(MIB) == written
    lab_down()
    assert_no_server_left(record)


@pytest.mark.lab_parallel  # data and paths, no figure; down checked by path, never by name
def test_an_xfs_on_a_modelled_disk(state: Path, tmp_path: Path) -> None:
    spec = parse_spec(
        "disks: [{name: h0, size: 512MiB, fs: xfs, model: {kind: hdd, rpm: 10000}}]", "x", "x"
    )
    lab = lab_up(spec)
    assert lab.mountpoint is not None
    (Path(lab.mountpoint) / "f").write_bytes(b"kept")
    assert (Path(lab.mountpoint) / "f").read_bytes() == b"kept"
    record = snapshot(state)
    lab_down()
    assert_no_server_left(record)


@pytest.mark.lab_parallel  # status and down after a kill, no figure; checked by path
@pytest.mark.parametrize(
    ("kind", "problem"),
    [("server", "d0: its model server (nbdkit on "), ("fuse", "d0: nbdfuse is not serving ")],
)
def test_kill_9_of_a_server_process_then_down_leaves_nothing(
    state: Path, kind: str, problem: str
) -> None:
    up = iotuner("lab", "up", "hdd")
    assert up.returncode == 0, up.stderr
    record = snapshot(state)
    (step,) = [s for s in record.steps if s.kind == kind]
    pid = int(step.detail["pid"])
    process = psutil.Process(pid)
    process.kill()  # SIGKILL
    process.wait(timeout=10)  # reaped by init: both outlive the `lab up` that started them

    status = iotuner("lab", "status")
    assert status.returncode == 1
    assert problem in status.stdout

    down = iotuner("lab", "down")
    assert down.returncode == 0, down.stderr
    assert "removed fuse mount" in down.stdout and "removed loop /dev/loop" in down.stdout
    assert_no_server_left(record)


@pytest.mark.lab_parallel  # down after a killed up, no figure; checked by path
def test_kill_9_mid_up_then_down_leaves_nothing(state: Path) -> None:
    record = kill_9_up_when(state, "hdd", lambda s: s.kind == "fuse", "starting nbdfuse", "nbdfuse")
    assert record.state == "building"
    down = iotuner("lab", "down")
    assert down.returncode == 0, down.stderr
    assert "removed nbdkit pid" in down.stdout
    assert_no_server_left(record)


# -- the built-in hdd's timing against the model's formulas: one lab, read only ----------------


@pytest.fixture(scope="module")
def disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabDisk]:
    """The built-in `hdd`'s disk, for the tests that only read it (last in the module, so no
    other test's lab is up beside it)."""
    with module_lab(tmp_path_factory, load_spec("hdd")) as (lab, _):
        yield lab.disks[0]


def test_random_reads_at_depth_1_take_a_seek_and_half_a_turn(disk: LabDisk) -> None:
    assert disk.model is not None
    result = fio(disk.device, "randread", "4k", 1, 6)
    expected_s = random_read_s(disk.model, disk.size_bytes, 4096)  # 13.2 ms: 76 IOPS
    print(f"4 KiB random reads, depth 1: {result['iops']:.1f} IOPS, model {1 / expected_s:.1f}")
    print(f"SPREAD hdd-depth1: iops/model {result['iops'] * expected_s:.3f}")
    # Never faster than the model: other work and the route (loop, FUSE and nbdfuse, not
    # modelled) only add time. Below it by the route's time and the machine's load: over 10 runs
    # (2026-11-28, the VM shared by 7 engineers, load average 0.5-22) IOPS / formula was 0.884 /
    # 0.936 / 0.970 (min / median / max), 0.97 on a quiet VM; 8 % allowed before went red in 5
    # of those 10 runs at load 15-22. 0.8 allowed now. How near the formula the drive comes on
    # a quiet machine is benchmarks/hdd_model.py's row 1.
    ratio = result["iops"] * expected_s
    assert 0.8 < ratio < 1.03, ratio
    assert 0.97 < result["lat_ns"]["mean"] / 1e9 / expected_s < 1 / 0.8


def test_the_outer_zone_streams_twice_as_fast_as_the_inner(disk: LabDisk) -> None:
    assert disk.model is not None
    span = 256 * MIB
    inner_offset = disk.size_bytes - span
    # Each zone twice, interleaved, the faster run kept: a burst of other work on the two cores
    # only slows a modelled disk (CI once measured the inner zone at 94.2 MB/s, 12 % low,
    # while the outer ran 3 % low), never speeds it past its model.
    runs: dict[str, list[float]] = {"outer": [], "inner": []}
    for _ in range(2):
        runs["outer"].append(fio(disk.device, "read", "1M", 4, 2, f"--size={span}")["bw_bytes"])
        runs["inner"].append(fio(disk.device, "read", "1M", 4, 2, f"--offset={inner_offset}",
                                 f"--size={span}")["bw_bytes"])  # fmt: skip
    outer, inner_mbps = max(runs["outer"]) / 1e6, max(runs["inner"]) / 1e6
    model_outer = stream_mbps(disk.model, disk.size_bytes, 0, span)  # 197.8
    model_inner = stream_mbps(disk.model, disk.size_bytes, inner_offset, span)  # 106.8
    print(f"outer {outer:.1f} MB/s (model {model_outer:.1f}), "
          f"inner {inner_mbps:.1f} MB/s (model {model_inner:.1f}); runs {runs}")  # fmt: skip
    ratio = (outer / inner_mbps) / (model_outer / model_inner)
    print(
        f"SPREAD hdd-zones: ratio/model {ratio:.3f} outer/model {outer / model_outer:.3f} "
        f"inner/model {inner_mbps / model_inner:.3f}"
    )
    # Other work only slows a modelled disk: neither zone runs past its model (measured at most
    # 0.972 of it outer, 0.983 inner). How far below it they run needs a quiet machine
    # (benchmarks/hdd_model.py, its zone rows).
    assert outer < 1.05 * model_outer and inner_mbps < 1.05 * model_inner
    # The ratio of the two, measured side by side, is the model's (x 1.85): over 10 runs
    # (2026-11-28, the VM shared by 7 engineers, load average 0.5-22) measured / model ratio
    # 0.971 / 0.996 / 1.025 (min / median / max); 10 % allowed.
    assert ratio == pytest.approx(1, rel=0.1)
