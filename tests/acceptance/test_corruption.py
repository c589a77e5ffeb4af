"""Corrupted, truncated and deleted attributes and links: warnings in the result, never a crash."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from probes.host import probe_host
from probes.hostfs import HostFS

GARBAGE = ["", "abc", "-1", "0x", "9" * 40, "\x00\x01\xff", "1-", "[", "Unknown", "4294967296 x"]


def _all_paths(root: Path) -> tuple[list[Path], list[Path]]:
    files, links = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                links.append(path)
            elif path.is_file():
                files.append(path)
    return files, links


def corrupt(root: Path, rng: random.Random, share: float = 0.15) -> int:
    """Damage a share of the files and links under root in every way a broken host can."""
    files, links = _all_paths(root)
    changed = 0
    for path in rng.sample(files, int(len(files) * share)):
        action = rng.choice(["garbage", "truncate", "delete", "dir", "binary"])
        if action == "garbage":
            path.write_text(rng.choice(GARBAGE))
        elif action == "truncate":
            path.write_bytes(path.read_bytes()[: rng.randint(0, 3)])
        elif action == "delete":
            path.unlink()
        elif action == "dir":
            path.unlink()
            path.mkdir()
        else:
            path.write_bytes(os.urandom(rng.randint(1, 64)))
        changed += 1
    for path in rng.sample(links, int(len(links) * share)):
        path.unlink()
        action = rng.choice(["dangling", "loop", "absolute", "file"])
        if action == "dangling":
            os.symlink("../nowhere/at/all", path)
        elif action == "loop":
            os.symlink(path.name, path)
        elif action == "absolute":
            os.symlink("/sys/devices/does/not/exist", path)
        else:
            path.write_text("not a link")
        changed += 1
    return changed


@pytest.mark.parametrize("seed", range(12))
def test_synthetic_host_survives_corruption(tmp_path: Path, seed: int) -> None:
    root = build(tmp_path / "host", Shape(disks=16, controllers=4, pci_functions=24))
    changed = corrupt(root, random.Random(seed))
    assert changed > 50
    topology = probe_host(HostFS(root))
    assert topology.warnings, "damage must be reported"
    for warning in topology.warnings:
        assert "\n" not in warning
        assert warning.split(":")[0].startswith(
            ("sys/", "proc/", "pci", "block", "net", "port", "numa", "udev")
        ), warning


@pytest.mark.parametrize("dump", ["32em64t-2n8c+dax+nvme+mic+dimms", "2pa-pcidomain32bits"])
def test_hwloc_dump_survives_corruption(hwloc_root, tmp_path: Path, dump: str) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "dump"
    shutil.copytree(hwloc_root(dump), root, symlinks=True)
    corrupt(root, random.Random(7), share=0.2)
    topology = probe_host(HostFS(root))
    assert topology.warnings


def test_known_damage_gives_a_warning_naming_the_file(tmp_path: Path) -> None:
    root = build(tmp_path / "host", Shape(disks=4, controllers=1, pci_functions=4))
    sda = os.path.realpath(root / "sys/block/sda")
    Path(sda, "size").write_text("lots\n")
    (root / "sys/block/sdb").unlink()
    os.symlink("../devices/gone/sdb", root / "sys/block/sdb")
    topology = probe_host(HostFS(root))
    assert any("/size: expected an integer, got 'lots'" in w for w in topology.warnings)
    assert any(w.startswith("sys/block/sdb") for w in topology.warnings)
    assert topology.block_device("sda") is not None


def test_cli_on_a_damaged_tree_prints_warnings_and_no_traceback(tmp_path: Path) -> None:
    root = build(tmp_path / "host", Shape(disks=8, controllers=2, pci_functions=8))
    corrupt(root, random.Random(3), share=0.3)
    result = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "probe", "--root", str(root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    # Warnings go to stderr, so a tree piped to a file holds the tree alone.
    assert "warning:" in result.stderr and "warning:" not in result.stdout
