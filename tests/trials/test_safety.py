"""check_disposable on real loop devices: one refusal per way a device can hold data."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.trials.conftest import Loops
from tuner.errors import BadInput
from tuner.trials.safety import check_disposable

pytestmark = pytest.mark.lab


def refusal(device: str) -> str:
    with pytest.raises(BadInput) as caught:
        check_disposable(device)
    message = str(caught.value)
    assert message.startswith(f"{device}: ") and "\n" not in message
    assert message.endswith("; refusing to write to it")
    return message


def partition(device: str, *, kernel: bool) -> None:
    """A GPT with one partition; with `kernel`, also the kernel's partition device."""
    if shutil.which("sfdisk") is None:
        pytest.skip("sfdisk not installed (Debian package fdisk)")
    subprocess.run(
        ["sfdisk", "--quiet", device], input="label: gpt\n,32MiB\n", text=True, check=True
    )
    if kernel:
        # The kernel's own re-read does not add loop partitions on every kernel; partx does.
        subprocess.run(["partx", "--add", device], check=True, capture_output=True)


def test_a_blank_loop_device_is_disposable(loops: Loops) -> None:
    check_disposable(loops.loop(64 << 20))


def test_a_file_system_signature_is_refused(loops: Loops) -> None:
    device = loops.loop(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)
    assert "holds ext4 (blkid -p finds its signature)" in refusal(device)


def test_a_device_with_partitions_is_refused(loops: Loops) -> None:
    device = loops.loop(64 << 20, partscan=True)
    partition(device, kernel=True)
    name = device.removeprefix("/dev/")
    assert f"has partitions ({name}p1)" in refusal(device)


def test_a_partition_table_the_kernel_did_not_scan_is_refused(loops: Loops) -> None:
    device = loops.loop(64 << 20)
    partition(device, kernel=False)
    assert "holds a gpt partition table (blkid -p)" in refusal(device)


def test_a_mounted_device_is_refused(loops: Loops) -> None:
    device = loops.loop(64 << 20)
    point = loops.mkfs_mount(device)
    assert f"is mounted on {point}" in refusal(device)


def test_a_device_under_another_loop_device_is_refused(loops: Loops) -> None:
    lower = loops.loop(64 << 20)
    upper = loops.over(lower)
    name = upper.removeprefix("/dev/")
    assert f"held by {name} (a loop device over {lower})" in refusal(lower)


def test_what_is_not_a_block_device_is_refused() -> None:
    with pytest.raises(BadInput, match=r"^/dev/null: not a block device$"):
        check_disposable("/dev/null")
