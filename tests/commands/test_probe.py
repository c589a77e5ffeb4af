"""`iotuner probe` as a user runs it: the installed entry point, real files, real exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from tests.cli import iotuner


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(
        tmp_path_factory.mktemp("cli") / "host", Shape(disks=6, controllers=2, pci_functions=12)
    )


def test_version() -> None:
    result = iotuner("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("iotuner ")


def test_missing_root_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = iotuner("probe", "--root", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "nowhere: no such directory" in result.stderr


def test_root_that_is_a_plain_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = iotuner("probe", "--root", str(tmp_path / "f"))
    assert result.returncode == 2
    assert "not a directory" in result.stderr


def test_json_has_the_flat_lists(host: Path) -> None:
    result = iotuner("probe", "--root", str(host), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    for key in ("numa_nodes", "pci_devices", "block_devices", "net_devices", "irqs", "warnings"):
        assert isinstance(doc[key], list), key
    assert doc["numa_nodes"][1]["cpus"] == list(range(8, 16))
    disks = {b["name"]: b for b in doc["block_devices"]}
    assert disks["sda"]["pci_address"] == doc["pci_devices"][1]["address"]
    assert disks["sda1"]["parents"] == ["sda"]
    assert disks["sda1"]["mountpoint"] == "/data"
    assert disks["sda"]["queue"]["scheduler"] == "mq-deadline"
    hba = next(p for p in doc["pci_devices"] if p["class"] == "0x010700")
    assert hba["link"]["width"] == 8 and hba["parent"] is not None


def test_section_limits_the_json(host: Path) -> None:
    doc = json.loads(iotuner("probe", "--root", str(host), "--json", "--section", "numa").stdout)
    assert "numa_nodes" in doc and "pci_devices" not in doc


def test_tree_shows_controllers_disks_and_irqs(host: Path) -> None:
    result = iotuner("probe", "--root", str(host))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "NUMA node 1" in out
    assert "sda" in out and "end_device-0:0:0" in out
    assert "x8 8.0 GT/s" in out
    assert "IRQs" in out and "-> CPU 0" in out


def test_gather_then_replay_gives_the_same_topology(host: Path, tmp_path: Path) -> None:
    capture = tmp_path / "host.tar.xz"
    result = iotuner("probe", "--root", str(host), "--gather", str(capture))
    assert result.returncode == 0, result.stderr
    original = json.loads(iotuner("probe", "--root", str(host), "--json").stdout)
    replayed = json.loads(iotuner("probe", "--root", str(capture), "--json").stdout)
    for doc in (original, replayed):
        doc.pop("root")
        doc["nodes"] = [n for n in doc["nodes"] if n["type"] != "Machine"]
    assert replayed == original


def test_gather_refuses_another_format(host: Path, tmp_path: Path) -> None:
    result = iotuner("probe", "--root", str(host), "--gather", str(tmp_path / "x.zip"))
    assert result.returncode == 2
    assert ".tar.xz" in result.stderr


def test_corrupt_capture_is_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(b"not an archive")
    result = iotuner("probe", "--root", str(bad))
    assert result.returncode == 2
    assert "bad.tar.xz" in result.stderr


@pytest.mark.live
@pytest.mark.whole_host  # its block devices read twice: another test's loop device between
def test_live_probe_gather_replay(tmp_path: Path) -> None:
    capture = tmp_path / "live.tar.xz"
    assert iotuner("probe", "--gather", str(capture)).returncode == 0
    live = json.loads(iotuner("probe", "--json").stdout)
    replay = json.loads(iotuner("probe", "--json", "--root", str(capture)).stdout)
    assert [p["address"] for p in replay["pci_devices"]] == [
        p["address"] for p in live["pci_devices"]
    ]
    assert {b["name"] for b in replay["block_devices"]} == {
        b["name"] for b in live["block_devices"]
    }
    assert capture.stat().st_size < 2_000_000


# -- hostile captures (issue 27): one line and exit 2, or a warning; never a traceback ---------


def one_line_exit_2(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize("name", ["a" * 300, "a" * 300 + ".tar.xz", "a" * 300 + "/host"])
def test_a_root_with_a_component_over_255_bytes_is_one_line(tmp_path: Path, name: str) -> None:
    said = one_line_exit_2(iotuner("probe", "--root", str(tmp_path / name)))
    assert "File name too long" in said


@pytest.mark.parametrize("suffix", [".tar.xz", ".tar.gz", ".tar.bz2"])
def test_a_capture_corrupt_past_its_header_is_one_line(
    host: Path, tmp_path: Path, suffix: str
) -> None:
    good = tmp_path / f"good{suffix}"
    with tarfile.open(good, f"w:{suffix.rpartition('.')[2]}") as tar:
        tar.add(host, arcname="host")
    data = bytearray(good.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 256] = bytes(256)
    bad = tmp_path / f"bad{suffix}"
    bad.write_bytes(bytes(data))
    said = one_line_exit_2(iotuner("probe", "--root", str(bad)))
    assert f"bad{suffix}: not a readable capture" in said


def test_a_memtotal_of_400_digits_is_a_warning_in_the_text_view(host: Path, tmp_path: Path) -> None:
    root = tmp_path / "host"
    shutil.copytree(host, root, symlinks=True)
    (root / "proc/meminfo").write_text(f"MemTotal: {'9' * 400} kB\nMemFree: 1 kB\n")
    result = iotuner("probe", "--root", str(root))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "proc/meminfo: MemTotal 99999999999999999999... kB is implausible" in result.stderr


def test_block_classes_that_are_files_are_a_warning_not_a_silent_loss(
    host: Path, tmp_path: Path
) -> None:
    root = tmp_path / "host"
    shutil.copytree(host, root, symlinks=True)
    for rel in ("sys/class/block", "sys/block"):
        shutil.rmtree(root / rel)
        (root / rel).write_text("")
    result = iotuner("probe", "--root", str(root))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "sys/class/block: not a directory; its entries are not read" in result.stderr


@pytest.mark.parametrize("command", ["probe", "advise"])
def test_a_root_without_a_sys_tree_is_refused(command: str, tmp_path: Path) -> None:
    # An empty directory, or the folder above a capture, used to be "No findings", exit 0.
    above = tmp_path / "captures"
    (above / "host1" / "sys").mkdir(parents=True)
    for root in (tmp_path / "empty", above):
        root.mkdir(exist_ok=True)
        line = one_line_exit_2(iotuner(command, "--root", str(root)))
        assert f"--root {root}: no sys/ tree" in line, line
