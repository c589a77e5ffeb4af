"""Measuring a grid with real fio on a real loop device: every cell read, nothing written."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from probes.host_root import live_host
from probes.hostfs import HostFS
from tests.loopdev import loop_device
from tests.sysfs_tree import SysTree
from tuner.errors import BadInput
from tuner.sweep.grid import Grid
from tuner.sweep.run import Cell, fio_options, logical_block_bytes, run_sweep
from tuner.trials.fio import writes
from tuner.trials.targets import TrialTarget


def digest(device: str) -> str:
    with open(device, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_cells_are_direct_reads_only() -> None:
    for rw in ("read", "randread"):
        options = fio_options(65536, 8, rw)
        assert options["direct"] == 1 and options["ioengine"] == "libaio"
        assert not writes(options)
    with pytest.raises(BadInput, match="reads only"):
        fio_options(4096, 1, "randwrite")


def test_a_small_grid_on_a_loop_device_reads_and_never_writes() -> None:
    with loop_device(size_mb=32) as name:
        device = f"/dev/{name}"
        Path(device).write_bytes(bytes(range(256)) * 4096)  # 1 MiB of known data
        before = digest(device)
        seen: list[Cell] = []
        grid = Grid((4096, 1 << 20), (1, 4))
        sweep = run_sweep(TrialTarget.device(device), grid, runtime_s=0.3, ramp_s=0.1,
                          on_cell=seen.append)  # fmt: skip
        assert digest(device) == before
    assert [(c.size, c.depth) for c in sweep.cells] == [
        (4096, 1), (1 << 20, 1), (4096, 4), (1 << 20, 4),
    ]  # fmt: skip
    assert list(sweep.cells) == seen
    assert all(cell.mbps > 0 and cell.iops > 0 for cell in sweep.cells)
    # Unthrottled memory behind the loop: 1 MiB requests move more bytes than 4 KiB ones.
    assert sweep.mbps(1 << 20, 1) > sweep.mbps(4096, 1)
    assert sweep.devices == (name,) and sweep.seconds > 0


def test_refuses_write_access_and_devices_smaller_than_the_requests() -> None:
    grid = Grid((4096,), (1,))
    writable = TrialTarget("/dev/null", ("null",), 1 << 30, writable=True)
    with pytest.raises(BadInput, match="never given write access"):
        run_sweep(writable, grid)
    small = TrialTarget("/dev/x", ("x",), 1 << 20, writable=False)
    with pytest.raises(BadInput, match="too small"):
        run_sweep(small, Grid((1 << 20,), (1,)))


def test_logical_block_size_of_a_disk_and_of_its_partition(tree: SysTree) -> None:
    disk = "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    tree.file(f"{disk}/queue/logical_block_size", 4096).dir(f"{disk}/sda1")
    tree.link_to("sys/class/block/sda", disk).link_to("sys/class/block/sda1", f"{disk}/sda1")
    fs = HostFS(tree.root)
    assert logical_block_bytes("sda", fs) == logical_block_bytes("sda1", fs) == 4096
    assert logical_block_bytes("nvme0n1", fs) is None


def test_sizes_below_the_logical_block_are_refused() -> None:
    with loop_device(size_mb=8) as name:
        assert logical_block_bytes(name, live_host()) == 512  # losetup's default sector size
        device = f"/dev/{name}"
        subprocess.run(["losetup", "--sector-size", "4096", device], check=True)
        try:
            with pytest.raises(BadInput, match=r"whole 4096-byte logical blocks, not 512, 2K$"):
                run_sweep(TrialTarget.device(device), Grid((512, 2048, 4096), (1,)))
        finally:  # the next user of this loop device expects the default
            subprocess.run(["losetup", "--sector-size", "512", device], check=True)
