"""The tunables against the real kernel: a loop device over /dev/shm, and the host's vm.*.

Every value changed here is put back in a `finally`, and the loop device's settings are reset
before it is detached (tests/loopdev.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.owned import Owned
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal, recover

pytestmark = pytest.mark.lab


@pytest.fixture
def loop(owned: Owned) -> str:
    """A fresh loop device, put back and detached by `owned`'s finalizer."""
    return owned.loop()


def queue(name: str, attr: str) -> str:
    return Path(f"/sys/block/{name}/queue/{attr}").read_text().strip()


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_read_ahead_scheduler_and_nr_requests_set_and_restored(loop: str) -> None:
    tunables = Tunables()
    before = {k: tunables.read(k, loop) for k in
              ("block.read_ahead_kb", "block.scheduler", "block.nr_requests")}  # fmt: skip
    assert before["block.scheduler"] == "none"
    with TunableEngine(Path("/"), None) as engine:
        applied = engine.apply({
            ("block.read_ahead_kb", loop): 4096,
            ("block.nr_requests", loop): 1024,  # deeper than 128: only with the scheduler below
            ("block.scheduler", f"/dev/{loop}"): "mq-deadline",
        })  # fmt: skip
        keys = [a.key for a in applied]
        assert keys == ["block.scheduler", "block.nr_requests", "block.read_ahead_kb"], (
            "scheduler first, readahead last"
        )
        assert queue(loop, "read_ahead_kb") == "4096"
        assert queue(loop, "nr_requests") == "1024"
        assert "[mq-deadline]" in queue(loop, "scheduler")
    assert {k: tunables.read(k, loop) for k in before} == before


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_the_refused_depth_is_what_the_kernel_refuses(loop: str) -> None:
    with pytest.raises(InvalidValue, match=f"block.nr_requests on {loop}: 256 exceeds 128, "
                       "the most the kernel accepts with scheduler none"):  # fmt: skip
        Tunables().validate("block.nr_requests", loop, 256)
    with pytest.raises(OSError):
        Path(f"/sys/block/{loop}/queue/nr_requests").write_text("256\n")
    Path(f"/sys/block/{loop}/queue/nr_requests").write_text("128\n")


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_the_kernels_rounding_is_expected_not_a_surprise(loop: str) -> None:
    # Not always 128: newer kernels derive a fresh loop device's readahead from its io_opt.
    found = queue(loop, "read_ahead_kb")
    with TunableEngine(Path("/"), None) as engine:
        (applied,) = engine.apply({("block.read_ahead_kb", loop): 4093})
    assert applied.actual == applied.expected == 4092, "the kernel keeps whole 4 KB pages"
    assert not applied.adjusted
    assert queue(loop, "read_ahead_kb") == found


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_a_scheduler_change_restores_a_custom_depth(loop: str) -> None:
    """Going back to none resets nr_requests to 128: the saved depth is written after it."""
    Path(f"/sys/block/{loop}/queue/nr_requests").write_text("64\n")
    with TunableEngine(Path("/"), None) as engine:
        engine.apply({("block.scheduler", loop): "mq-deadline"})
        assert queue(loop, "nr_requests") == "256"
    assert "[none]" in queue(loop, "scheduler")
    assert queue(loop, "nr_requests") == "64"


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_a_depth_only_the_old_scheduler_allowed_comes_back_with_it(loop: str) -> None:
    """Restored newest first, depth 202 is refused while the trial's scheduler none is still
    in place; it is tried again once mq-deadline is back."""
    Path(f"/sys/block/{loop}/queue/scheduler").write_text("mq-deadline\n")
    Path(f"/sys/block/{loop}/queue/nr_requests").write_text("202\n")
    with TunableEngine(Path("/"), None) as engine:
        engine.apply({("block.scheduler", loop): "none", ("block.nr_requests", loop): 64})
        assert queue(loop, "nr_requests") == "64"
    assert "[mq-deadline]" in queue(loop, "scheduler")
    assert queue(loop, "nr_requests") == "202"


def sysctl(key: str) -> str:
    return Path("/proc/sys", *key.split(".")).read_text().strip()


def put(key: str, value: str) -> None:
    Path("/proc/sys", *key.split(".")).write_text(value + "\n")


def test_vm_dirty_background_ratio_on_the_live_host() -> None:
    original = sysctl("vm.dirty_background_ratio")
    if original == "0":
        pytest.skip("this host sets vm.dirty_background_bytes instead")
    wanted = 7 if original != "7" else 8
    try:
        with TunableEngine(Path("/"), None) as engine:
            engine.apply({("vm.dirty_background_ratio", "host"): wanted})
            assert sysctl("vm.dirty_background_ratio") == str(wanted)
        assert sysctl("vm.dirty_background_ratio") == original
    finally:
        put("vm.dirty_background_ratio", original)


def test_vm_dirty_background_bytes_gives_the_ratio_back() -> None:
    """Writing the bytes zeroes the ratio; the restore writes the ratio, which zeroes the bytes."""
    ratio, size = sysctl("vm.dirty_background_ratio"), sysctl("vm.dirty_background_bytes")
    if ratio == "0":
        pytest.skip("this host sets vm.dirty_background_bytes instead")
    try:
        with TunableEngine(Path("/"), None) as engine:
            engine.apply({("vm.dirty_background_bytes", "host"): 64 << 20})
            assert (sysctl("vm.dirty_background_ratio"), sysctl("vm.dirty_background_bytes")) == (
                "0",
                str(64 << 20),
            )
        assert (sysctl("vm.dirty_background_ratio"), sysctl("vm.dirty_background_bytes")) == (
            ratio,
            size,
        )
    finally:
        put("vm.dirty_background_ratio", ratio)


@pytest.fixture
def rotational(loop: str) -> str:
    """The loop device marked rotational, as a disk is: writing max_sectors_kb then moves
    read_ahead_kb on kernels 6.17 and later (loop_device puts the flag back)."""
    Path(f"/sys/block/{loop}/queue/rotational").write_text("1")
    Path(f"/sys/block/{loop}/queue/read_ahead_kb").write_text("128")
    return loop


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_a_batch_with_max_sectors_and_readahead_reads_back_as_written(rotational: str) -> None:
    """The engine writes the limit before readahead and reads the whole batch back: both hold
    what was asked when the trial would start, whatever the kernel couples."""
    with TunableEngine(Path("/"), None) as engine:
        applied = engine.apply({
            ("block.read_ahead_kb", rotational): 256,
            ("block.max_sectors_kb", rotational): 1024,
        })  # fmt: skip
        assert queue(rotational, "read_ahead_kb") == "256"
        assert queue(rotational, "max_sectors_kb") == "1024"
        assert {a.key: a.actual for a in applied} == {
            "block.read_ahead_kb": 256,
            "block.max_sectors_kb": 1024,
        }
    assert queue(rotational, "read_ahead_kb") == "128"


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_readahead_moved_by_max_sectors_alone_is_restored(rotational: str) -> None:
    before = queue(rotational, "max_sectors_kb")
    with TunableEngine(Path("/"), None) as engine:
        engine.apply({("block.max_sectors_kb", rotational): 1024})
        moved = queue(rotational, "read_ahead_kb")
    assert (queue(rotational, "max_sectors_kb"), queue(rotational, "read_ahead_kb")) == (
        before,
        "128",
    ), f"readahead was {moved} during the change"


@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_a_killed_processs_depth_comes_back_after_its_scheduler(loop: str, tmp_path: Path) -> None:
    """Recovery (what `iotuner rollback` does for a tune killed with -9) meets the changes
    newest first: the depth 202 is refused while the dead tune's scheduler none holds, and
    is tried again once mq-deadline is back, not reported as a failure."""
    Path(f"/sys/block/{loop}/queue/scheduler").write_text("mq-deadline\n")
    Path(f"/sys/block/{loop}/queue/nr_requests").write_text("202\n")
    state = tmp_path / "state.db"
    killed = (
        "import os, sys; from pathlib import Path\n"
        "from tuner.tunables.engine import TunableEngine\n"
        "from tuner.tunables.journal import Journal\n"
        "engine = TunableEngine(Path('/'), Journal(Path(sys.argv[1])))\n"
        "engine.apply({('block.scheduler', sys.argv[2]): 'none',"
        " ('block.nr_requests', sys.argv[2]): 22})\n"
        "os._exit(0)\n"  # no restore on the way out: as after kill -9
    )
    subprocess.run([sys.executable, "-c", killed, str(state), loop], check=True, timeout=60)
    assert "[none]" in queue(loop, "scheduler") and queue(loop, "nr_requests") == "22"
    with Journal(state) as journal:
        results = recover(lambda root: TunableEngine(root, journal), journal)
    assert sorted(r.outcome for r in results) == ["restored", "restored"], results
    assert "[mq-deadline]" in queue(loop, "scheduler")
    assert queue(loop, "nr_requests") == "202"
