"""`lab up` and `lab down` of every built-in spec, and of user specs with a file system."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.lab.conftest import assert_nothing_left, snapshot
from tuner.lab import (
    Lab,
    lab_check,
    lab_down,
    lab_session,
    lab_status,
    lab_up,
    load_spec,
    parse_spec,
    system,
    throttle,
)
from tuner.lab.queue import read_queue
from tuner.lab.system import LabError
from tuner.tunables.access import Tunables

pytestmark = pytest.mark.lab


def fs_type(mountpoint: str) -> str:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if fields[1] == mountpoint:
            return fields[2]
    return ""


def check_lab_is_real(lab: Lab) -> None:
    """Each device, mount and ceiling the Lab names exists as the spec says."""
    assert lab_status() == lab
    check = lab_check()
    assert check is not None and check.problems == ()
    for bus in lab.buses:
        assert fs_type(bus.mountpoint) == "ext4"
        caps = throttle.read_caps("v1", system.majmin(bus.device))
        assert caps == throttle.Caps(int(bus.read_mbps * 1e6), int(bus.write_mbps * 1e6))
    for disk in lab.disks:
        backing = system.loop_backing(disk.device)
        assert backing is not None and backing.endswith(f"/{disk.name}.img")
        if disk.bus:
            assert backing.startswith(lab.buses[0].mountpoint.rsplit("/", 1)[0])
            assert Path(f"/sys/block/{Path(disk.device).name}/loop/dio").read_text().strip() == "1"
        caps = throttle.read_caps("v1", system.majmin(disk.device))
        assert caps.read_bps == int(disk.read_mbps * 1e6)
        assert caps.read_iops == caps.write_iops == disk.iops
        queue = read_queue(Tunables(), disk.device)
        assert (queue["scheduler"], queue["read_ahead_kb"]) == ("none", "128")
        size = int(Path(f"/sys/block/{Path(disk.device).name}/size").read_text()) * 512
        assert size == disk.size_bytes


@pytest.mark.parametrize("name", ["three-disks-one-bus", "two-buses", "stripe"])
def test_up_down_leaves_nothing(state: Path, name: str) -> None:
    lab = lab_up(load_spec(name))
    record = snapshot(state)
    check_lab_is_real(lab)
    if name == "stripe":
        assert lab.stripe is not None and lab.stripe == lab.mountpoint
        assert fs_type(lab.stripe) == "btrfs"
    else:
        assert lab.stripe is None and lab.mountpoint is None
    found = {s.device: s.detail["found"] for s in record.steps if s.kind == "loop"}
    removed = lab_down()
    assert any(line.startswith("loop ") for line in removed)
    assert_nothing_left(record)
    for device, settings in found.items():  # what an earlier user left is put back
        assert read_queue(Tunables(), str(device)) == settings
    assert lab_down() == []


@pytest.mark.lab_parallel  # its own lab, checked by path and its own record, no figure
def test_single_disk_session_and_refusals(state: Path) -> None:
    with lab_session("single-disk") as lab:
        record = snapshot(state)
        check_lab_is_real(lab)
        assert [d.name for d in lab.disks] == ["d0"] and lab.buses == ()
        again = iotuner("lab", "up", "three-disks-one-bus")
        assert again.returncode == 2
        assert "a lab is already up: single-disk" in again.stderr
        assert "iotuner lab down" in again.stderr
        assert again.stderr.strip().count("\n") == 0
        status = iotuner("lab", "status", "--json")
        assert status.returncode == 0
        assert json.loads(status.stdout)["lab"]["disks"][0]["device"] == lab.disks[0].device
    assert_nothing_left(record)
    assert iotuner("lab", "status").stdout.strip() == "no lab"
    down = iotuner("lab", "down")
    assert (down.returncode, down.stdout.strip()) == (0, "no lab")


@pytest.mark.lab_parallel  # its own lab, checked by path and its own record, no figure
@pytest.mark.parametrize("fs", ["xfs", "ext4"])
def test_user_spec_with_a_file_system(state: Path, tmp_path: Path, fs: str) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(
        "buses: [{name: b0, read_mbps: 200, write_mbps: 200}]\n"
        "disks:\n"
        f"  - {{name: d0, bus: b0, read_mbps: 100, write_mbps: 100, iops: 500, size: 320MiB, "
        f"fs: {fs}}}\n"
        "  - {name: d1, read_mbps: 50, write_mbps: 50, iops: 100, size: 64MiB}\n"
    )
    up = iotuner("lab", "up", str(spec), "--json")
    assert up.returncode == 0, up.stderr
    lab = json.loads(up.stdout)
    assert lab["spec_name"] == "small"
    assert lab["mountpoint"].endswith("/fs/d0")
    assert fs_type(lab["mountpoint"]) == fs
    (Path(lab["mountpoint"]) / "scratch").write_bytes(b"x" * 4096)
    record = snapshot(state)
    down = iotuner("lab", "down", "--json")
    assert down.returncode == 0, down.stderr
    assert any(r.startswith("mount ") for r in json.loads(down.stdout)["removed"])
    assert_nothing_left(record)


@pytest.mark.lab_parallel  # refused before any lab, loop device or setting
def test_malformed_spec_file_exits_2(state: Path, tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "disks:\n  - {name: d0, read_mbps: 100, write_mbps: 100, iops: -5, size: 1GiB}\n"
    )
    result = iotuner("lab", "up", str(spec))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert f"{spec}: disks[0] (d0): iops must be a positive integer, got -5" in result.stderr
    assert not (state / "lab.json").exists()


@pytest.mark.lab_parallel  # its own lab, checked by path and its own record, no figure
def test_down_keeps_what_it_could_not_remove_and_finishes_later(state: Path) -> None:
    spec = parse_spec(
        "disks: [{name: d0, read_mbps: 100, write_mbps: 100, iops: 500, size: 320MiB, fs: ext4}]",
        "busy.yaml",
        default_name="busy",
    )
    lab = lab_up(spec)
    assert lab.mountpoint is not None
    record = snapshot(state)
    with open(Path(lab.mountpoint) / "held", "w") as held:  # keeps the mount busy
        with pytest.raises(LabError, match="lab down could not remove"):
            lab_down()
        kept = snapshot(state)
        assert kept.state == "broken"
        assert {s.kind for s in kept.steps} >= {"mount", "dir"}
        assert "throttle" not in {s.kind for s in kept.steps}  # those went
        status = iotuner("lab", "status")
        assert status.returncode == 1
        assert "`lab down` could not remove all of it" in status.stdout
        held.write("x")
    assert lab_down()[-1] == f"record {record.path}"
    assert_nothing_left(record)
