"""The manual page is written from the command line and kept in docs/iotuner.1."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.cli_help import EXAMPLES

REPO = Path(__file__).resolve().parents[1]


def generated() -> str:
    return subprocess.run([sys.executable, "-m", "tuner.cli", "man", "--roff"],
                          capture_output=True, text=True, check=True, cwd=REPO).stdout  # fmt: skip


def test_docs_iotuner_1_is_generated_from_the_cli() -> None:
    assert (REPO / "docs" / "iotuner.1").read_text() == generated(), (
        "docs/iotuner.1 is stale: iotuner man --roff > docs/iotuner.1"
    )


def test_every_command_option_and_example_is_in_the_page() -> None:
    page = generated()
    for command in ("probe", "advise", "tune", "apply", "rules list", "lab status", "daemon"):
        assert f".SS iotuner {command}".replace("-", "\\-") in page
    assert "\\fB\\-\\-plan\\-out\\fR \\fIPLAN_OUT\\fR" in page
    for example in EXAMPLES["advise"]:
        assert example.replace("-", "\\-") in page
    assert ".SH EXIT STATUS" in page and ".SH FILES" in page


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_groff_renders_the_page_without_warnings(tmp_path: Path) -> None:
    page = tmp_path / "iotuner.1"
    page.write_text(generated())
    check = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)],
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0 and check.stderr == ""
    shown = subprocess.run(["groff", "-man", "-Tutf8", str(page)], capture_output=True,
                           text=True).stdout  # fmt: skip
    assert "iotuner advise --workload disk-to-network --link-gbps 10 --rtt-ms 100" in shown


def test_apply_destroy_data_takes_the_device_it_may_write() -> None:
    # It was a yes/no switch that let a write workload overwrite the plan's device (issue 27).
    page = generated()
    start = page.index(".SS iotuner apply")
    section = page[start : page.index(".SS", start + 4)]
    assert "\\fB\\-\\-destroy\\-data\\fR \\fIDEVICE\\fR" in section
    assert "\\-\\-target /dev/sdb \\-\\-destroy\\-data /dev/sdb" in section


def test_files_names_every_file_apply_manages() -> None:
    """FILES lacked the boot unit (issue 30): every path apply writes is listed there."""
    from tuner.apply.render import BOOT_UNIT, SYSCTL_CONF, UDEV_RULES

    files = generated().split(".SH FILES", 1)[1].split(".SH", 1)[0]
    for rel in (UDEV_RULES, SYSCTL_CONF, BOOT_UNIT):
        assert f"/{rel}".replace("-", r"\-") in files or f"/{rel}" in files, rel


def test_iotuner_man_shows_the_page_with_its_environment(tmp_path: Path) -> None:
    """`man iotuner` finds the page pip installs in <prefix>/share/man/man1 only for some
    prefixes; `iotuner man` shows it wherever iotuner is (issue 30), ENVIRONMENT included."""
    from tests.cli import iotuner

    piped = iotuner("man")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == generated() == iotuner("man", "--roff").stdout
    page = piped.stdout
    environment = page[page.index(".SH ENVIRONMENT") : page.index(".SH FILES")]
    for name in ("IOTUNER_STATE_DIR", "IOTUNER_ANSIBLE_PLAYBOOK"):
        assert f".B {name}" in environment
    if shutil.which("man") is not None:
        (tmp_path / "iotuner.1").write_text(page)
        shown = subprocess.run(["man", "-l", str(tmp_path / "iotuner.1")], capture_output=True,
                               text=True, env={"MANPAGER": "cat", "PATH": "/usr/bin:/bin"},
                               check=True).stdout  # fmt: skip
        assert "ENVIRONMENT" in shown and "IOTUNER_STATE_DIR" in shown
