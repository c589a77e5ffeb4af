"""`lab down` while something else holds a lab's device: a copy of its mounts in another mount
namespace (what `ip netns exec` makes for every iperf3 trial), and a process with it open."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab.conftest import assert_nothing_left, snapshot
from tests.loopdev import loop_device
from tuner.lab import lab_down, lab_up, load_spec
from tuner.lab.holders import holders
from tuner.lab.system import LabError
from tuner.lab.teardown import DETACH_WAIT_S

pytestmark = pytest.mark.lab


def _mounted_in(pid: int, point: str) -> bool:
    lines = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    return any(line.split()[4] == point for line in lines)


# Serial: the copy is of every mount on the host, another worker's among them, and would keep
# their devices open as it kept ours.
def test_a_copy_of_the_mounts_in_another_namespace_does_not_keep_the_bus_open(
    state: Path,
) -> None:
    """The host's / is private: `ip netns exec` (unshare, then / made rslave) copies the bus's
    ext4 mount, and the copy kept the bus's loop device open after `down` unmounted ours (on the
    old code: "/dev/loopN is still in use" after the 5 s wait, the lab left broken, 7 of 15
    bottleneck runs beside others' iperf3 trials). Under the lab's shared root the copy is a
    slave and our unmount reaches it."""
    lab = lab_up(load_spec("three-disks-one-bus"))
    record = snapshot(state)
    (bus,) = lab.buses
    copier = subprocess.Popen(["unshare", "--mount", "--propagation", "slave", "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while not _mounted_in(copier.pid, bus.mountpoint):  # unshare has not run yet
            assert time.monotonic() < deadline, "unshare never copied the bus's mount"
            time.sleep(0.05)
        started = time.monotonic()
        lab_down()
        took = time.monotonic() - started
        assert not _mounted_in(copier.pid, bus.mountpoint), "the copy went with ours"
    finally:
        copier.kill()
        copier.wait()
    assert_nothing_left(record)
    assert took < DETACH_WAIT_S, "down did not wait for the copy's holder to give it up"


def _holder(device: str, seconds: float) -> subprocess.Popen[str]:
    """A process with `device` open for `seconds` (forever for 0), once it says so."""
    code = (
        "import os, sys, time\n"
        f"fd = os.open({device!r}, os.O_RDONLY)\n"
        "print('open', flush=True)\n"
        f"time.sleep({seconds} or 3600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "open\n"
    return holder


@pytest.mark.lab_parallel
def test_a_process_holding_a_disk_is_named_and_a_short_hold_waited_for(state: Path) -> None:
    """A process that keeps a disk open past the detach wait is named by pid and comm (the old
    message named no one), the lab is kept as broken, and `down` finishes once it exits; one
    that closes within the wait is waited for (DETACH_WAIT_S: about 5 s)."""
    lab = lab_up(load_spec("single-disk"))
    record = snapshot(state)
    holder = _holder(lab.disks[0].device, 0)
    comm = Path(f"/proc/{holder.pid}/comm").read_text().strip()
    try:
        with pytest.raises(LabError) as err:
            lab_down()
    finally:
        holder.kill()
        holder.wait()
    who = f"{comm} pid {holder.pid} has it open"
    assert f"{lab.disks[0].device} is still in use ({who})" in str(err.value)
    assert snapshot(state).state == "broken"
    lab_down()
    assert_nothing_left(record)

    lab = lab_up(load_spec("single-disk"))
    record = snapshot(state)
    holder = _holder(lab.disks[0].device, 1)
    try:
        lab_down()  # returns once the holder's close lets the device go
    finally:
        holder.kill()
        holder.wait()
    assert_nothing_left(record)


# Serial: as the first test, the copy is of every mount on the host.
def test_holders_names_a_process_whose_own_namespace_still_mounts_the_device(
    tmp_path: Path,
) -> None:
    """A copy made private (`unshare --propagation private`, not what `ip netns exec` does)
    gets no unmount from ours: the device stays held, by no file descriptor anywhere, and
    `holders` names the process whose namespace has it and where it is mounted there."""
    point = tmp_path / "mnt"
    point.mkdir()
    with loop_device(64) as name:
        device = f"/dev/{name}"
        subprocess.run(["mkfs.ext4", "-q", device], check=True, capture_output=True)
        subprocess.run(["mount", device, str(point)], check=True)
        copier = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "60"])
        try:
            deadline = time.monotonic() + 10
            while not _mounted_in(copier.pid, str(point)):
                assert time.monotonic() < deadline, "unshare never copied the mount"
                time.sleep(0.05)
            subprocess.run(["umount", str(point)], check=True)
            named = f"sleep pid {copier.pid} has it mounted at {point} in its own mount namespace"
            assert named in holders(device)
        finally:
            copier.kill()
            copier.wait()
            subprocess.run(["umount", str(point)], check=False, capture_output=True)
        assert not any(f"pid {copier.pid} " in line for line in holders(device))
