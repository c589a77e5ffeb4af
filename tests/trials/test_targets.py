"""Trial targets: devices (read-only unless disposable) and scratch files iotuner owns."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.trials.conftest import Loops
from tuner.errors import BadInput
from tuner.rules.installed import load_rule_base
from tuner.trials import TrialTarget, run_trial

WORKLOADS = {w.name: w for w in load_rule_base().workloads}


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device; refusals and files, no figure
def test_a_device_is_read_only_unless_named_disposable(loops: Loops) -> None:
    device = loops.loop(64 << 20)
    name = device.removeprefix("/dev/")
    target = TrialTarget.device(device)
    assert (target.devices, target.size_bytes, target.writable) == ((name,), 64 << 20, False)
    assert not target.is_scratch
    assert TrialTarget.device(device, destroy_data=True).writable


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device; refusals and files, no figure
def test_destroy_data_on_a_device_with_data_is_refused(loops: Loops) -> None:
    device = loops.loop(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)
    TrialTarget.device(device)  # reading it is fine
    with pytest.raises(BadInput, match="holds ext4"):
        TrialTarget.device(device, destroy_data=True)


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device; refusals and files, no figure
def test_a_write_workload_on_a_read_only_device_is_refused_before_any_io(loops: Loops) -> None:
    target = TrialTarget.device(loops.loop(64 << 20))
    with pytest.raises(BadInput, match="workload stream-write writes \\(rw=write\\)"):
        run_trial(target, WORKLOADS["stream-write"], runtime_s=1, ramp_s=0)
    with pytest.raises(BadInput, match="spreads over 4096 files per job"):
        run_trial(target, WORKLOADS["small-files"], runtime_s=1, ramp_s=0)


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device; refusals and files, no figure
def test_the_scratch_file_is_written_once_then_removed(loops: Loops) -> None:
    point = loops.mkfs_mount(loops.loop(128 << 20))
    with TrialTarget.scratch(point, 16 << 20) as target:
        path = Path(target.path)
        assert path.name == f"iotuner-scratch-{os.getpid()}.dat"
        # In a private directory of an unpredictable name: nothing can be planted there.
        private = Path(target.directory or "")
        assert private.parent == point and path.parent == private
        assert private.name.startswith(f"iotuner-scratch-{os.getpid()}-")
        assert private.stat().st_mode & 0o777 == 0o700
        assert target.writable and target.is_scratch and target.size_bytes == 16 << 20
        assert target.devices == (loops.devices[-1].removeprefix("/dev/"),)
        st = path.stat()
        assert st.st_size == 16 << 20 and st.st_blocks * 512 >= 16 << 20
        assert path.read_bytes()[:4096] != bytes(4096)  # real data, not unwritten extents
    assert not path.exists() and sorted(p.name for p in point.iterdir()) == ["lost+found"]


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device; refusals and files, no figure
def test_the_scratch_file_is_removed_when_the_trial_fails(loops: Loops) -> None:
    point = loops.mkfs_mount(loops.loop(128 << 20))
    with pytest.raises(RuntimeError), TrialTarget.scratch(point, 8 << 20) as target:
        (Path(target.directory or "") / f"{target.scratch_prefix}.fio.0.0").write_bytes(b"x")
        raise RuntimeError("trial failed")
    assert sorted(p.name for p in point.iterdir()) == ["lost+found"]


def test_a_directory_without_a_block_device_is_refused() -> None:
    for directory, fstype in (("/dev/shm", "tmpfs"), ("/proc", "proc"), ("/sys", "sysfs")):
        with pytest.raises(BadInput) as caught, TrialTarget.scratch(directory):
            pass
        assert str(caught.value) == (
            f"{directory}: on {fstype}, which has no block device under it: a trial there "
            "would measure memory, not storage"
        )
    assert not list(Path("/dev/shm").glob("iotuner-scratch-*"))


def test_what_is_not_a_directory_or_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not a directory"), TrialTarget.scratch(tmp_path / "no"):
        pass
    with pytest.raises(BadInput, match="/dev/null: not a block device"):
        TrialTarget.device("/dev/null")
