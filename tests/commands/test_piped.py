"""Every command's text view through a pipe: one record per line, never wrapped, never cut
(as lsblk and lstopo print), so `iotuner probe | grep vda` finds the whole disk line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import iotuner


def _root_mount() -> tuple[str, str]:
    """The file system type and options of / as the kernel states them."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if fields[1] == "/":
            return fields[2], fields[3]
    pytest.skip("no / in /proc/self/mounts")


def test_probe_through_a_pipe_keeps_each_disk_on_one_line_with_its_file_system() -> None:
    fstype, _ = _root_mount()
    out = iotuner("probe").stdout  # captured: not a terminal
    lines = [line for line in out.splitlines() if "  sched " in line]
    assert lines, out
    mounted = [line for line in lines if line.rstrip().endswith(f"{fstype} /")]
    assert mounted, "no disk line ends with the root file system:\n" + out


def test_mount_options_and_irq_names_print_whole_through_a_pipe() -> None:
    _, options = _root_mount()
    storage = iotuner("probe", "--section", "storage").stdout
    assert options in storage, storage
    irqs = iotuner("probe", "--section", "irq").stdout
    names = [line.split()[-1] for line in Path("/proc/interrupts").read_text().splitlines()[1:]]
    longest = max((n for n in names if not n.isdigit()), key=len)
    assert "…" not in irqs and longest in irqs, irqs


@pytest.mark.parametrize(
    "args",
    [("probe",), ("probe", "--section", "irq"), ("probe", "--section", "storage"),
     ("advise", "--explain"), ("history",), ("lab", "status"), ("rules", "list")],
)  # fmt: skip
def test_no_text_view_cuts_a_value_when_piped(args: tuple[str, ...], tmp_path: Path) -> None:
    """No ellipsis anywhere, and no line that goes on on the next (a wrapped record)."""
    result = iotuner(*args, state=tmp_path / "state")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout, result.stdout


def test_verify_through_a_pipe_keeps_each_check_on_one_line(tmp_path: Path) -> None:
    """A managed file's path under a long --conf-root folded onto a second row at 80 columns:
    piped, each check's path, expectation and result share one line."""
    conf = tmp_path / ("a-long-configuration-root-" * 3)
    conf.mkdir()
    rmem = Path("/proc/sys/net/ipv4/tcp_rmem").read_text().split()
    plan = tmp_path / "plan.yaml"
    plan.write_text("plan_version: 1\ncreated: '2026-11-22T07:10:00+00:00'\nhost: h\n"
                    "source: tune\nworkload: null\nentries:\n- key: net.ipv4.tcp_rmem\n"
                    f"  target: host\n  value: [{', '.join(rmem)}]\n")  # fmt: skip
    result = iotuner("verify", str(plan), "--conf-root", str(conf), state=tmp_path / "state")
    assert result.returncode == 1, result.stdout + result.stderr  # the sysctl.d file is missing
    (row,) = [line for line in result.stdout.splitlines() if "60-iotuner.conf" in line]
    assert f"{conf}/etc/sysctl.d/60-iotuner.conf" in row and "FAILED missing" in row, row
