"""check_disposable on real loop devices: one refusal per way a device can hold data."""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.trials.conftest import Loops
from tuner.errors import BadInput
from tuner.trials.safety import check_disposable, check_scratch_directory, exclusive_writes
from tuner.trials.targets import TrialTarget

# Each test's own loop devices, file systems and mounts (tests/trials/conftest.py); refusals
# and exclusive opens, no figure or time: beside other tests (lab_parallel).
pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]


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


# -- the host changes while a tune runs (issue 17) ---------------------------------------------


def test_a_write_trial_holds_the_device_exclusively(loops: Loops) -> None:
    device = loops.loop(64 << 20)
    with exclusive_writes(device):
        with pytest.raises(OSError) as caught:
            os.close(os.open(device, os.O_RDONLY | os.O_EXCL))
        assert caught.value.errno == errno.EBUSY
        done = subprocess.run(["mkfs.ext4", "-q", "-F", device], capture_output=True, text=True)
        assert done.returncode != 0, "no file system can be made on it during the trial"
        with open(device, "rb") as plain:  # fio's own, non-exclusive, opens go through
            assert len(plain.read(4096)) == 4096
    os.close(os.open(device, os.O_RDONLY | os.O_EXCL))  # released after


def test_each_write_trial_checks_the_device_again(loops: Loops) -> None:
    from tuner.rules.installed import load_rule_base
    from tuner.trials import TrialTarget, run_trial

    device = loops.loop(64 << 20)
    target = TrialTarget.device(device, destroy_data=True)
    write = {w.name: w for w in load_rule_base().workloads}["random-write"]
    run_trial(target, write, runtime_s=0.5, ramp_s=0)
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)  # someone put data there
    with pytest.raises(BadInput, match="holds ext4"):
        run_trial(target, write, runtime_s=0.5, ramp_s=0)
    assert "ext4" in subprocess.run(["blkid", "-p", device], capture_output=True, text=True).stdout


def test_scratch_files_go_only_where_nobody_else_can_swap_them(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(BadInput, match=r"writable by others \(mode 0777\)"):
        check_scratch_directory(shared)
    shared.chmod(0o1777)  # sticky: nobody else may rename or remove what is ours
    check_scratch_directory(shared)
    if os.geteuid() == 0:
        os.chown(shared, pwd.getpwnam("nobody").pw_uid, -1)
        with pytest.raises(BadInput, match="owned by uid"):
            check_scratch_directory(shared)


def test_a_scratch_directory_inside_one_another_user_owns_is_refused(tmp_path: Path) -> None:
    # Issue 27: only the scratch directory itself was checked. Its parent's owner can rename
    # it away and put a link to a device in its place between the check and fio's writes.
    if os.geteuid() != 0:
        pytest.skip("needs root to give files to another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, pwd.getpwnam("nobody").pw_uid, -1)
    scratch = theirs / "scratch"
    scratch.mkdir(mode=0o700)
    with pytest.raises(BadInput, match=f"{theirs}: owned by uid") as caught:  # noqa: SIM117
        with TrialTarget.scratch(scratch, size_bytes=4096):
            pass
    assert "\n" not in str(caught.value)
    assert list(scratch.iterdir()) == []


def test_a_scratch_directory_under_one_anybody_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # not sticky
    scratch = shared / "scratch"
    scratch.mkdir(mode=0o700)
    with pytest.raises(BadInput, match=rf"{shared}: writable by others \(mode 0777\)"):
        check_scratch_directory(scratch)


def test_a_scratch_directory_named_through_a_link_is_refused(tmp_path: Path) -> None:
    # The link's target is checked, not the link: whoever may change the link changes where
    # fio writes. O_NOFOLLOW on the last component, as for the state directory.
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(BadInput, match="symbolic link"):
        check_scratch_directory(tmp_path / "link")
