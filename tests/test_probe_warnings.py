"""The probes' warnings for people: one line per kind of problem, on stderr."""

from __future__ import annotations

from pathlib import Path

from tests.cli import iotuner
from tuner.probe_warnings import summarise


def test_warnings_about_many_files_read_as_one_line() -> None:
    warnings = [
        f"sys/block/loop{i}: dangling link (../devices/virtual/block/loop{i})" for i in range(8)
    ] + [f"sys/block/ram{i}: dangling link (../x)" for i in range(16)]
    functions = ("0004:05:00.0", "0006:00:00.0")
    warnings += [f"sys/bus/pci/devices/{a}/{attr}: missing" for a in functions
                 for attr in ("vendor", "device")]  # fmt: skip
    warnings.append("pci:0000:60:00.0: parent pci:0000:5f:03.0 not found")
    lines = [group.line() for group in summarise(warnings)]
    assert lines == [
        "sys/block/*: dangling link, 24 times (loop0, loop1, loop2, loop3, loop4, ..., ram15)",
        "sys/bus/pci/devices/*/vendor: missing, 2 times (0004:05:00.0, 0006:00:00.0)",
        "sys/bus/pci/devices/*/device: missing, 2 times (0004:05:00.0, 0006:00:00.0)",
        "pci:0000:60:00.0: parent pci:0000:5f:03.0 not found",
    ]


def test_a_single_warning_keeps_its_detail() -> None:
    (group,) = summarise(["sys/block/sda/size: expected an integer, got 'lots'"])
    assert group.line() == "sys/block/sda/size: expected an integer, got 'lots'"


def test_probe_sends_the_summary_to_stderr(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sys/block").mkdir(parents=True)
    for i in range(5):
        (root / "sys/block" / f"loop{i}").symlink_to(f"../devices/virtual/block/loop{i}")
    result = iotuner("probe", "--root", str(root))
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stdout and "None" not in result.stdout
    assert (
        "sys/block/*: dangling link, 5 times (loop0, loop1, loop2, loop3, loop4)" in result.stderr
    )
    assert "5 warnings in all" in result.stderr
    assert "TCP settings: not readable here" in iotuner("probe", "--root", str(root)).stdout
