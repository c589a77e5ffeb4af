"""Output files are written through a random O_EXCL temporary and renamed (issue 27).

`report --out` wrote `.NAME.tmp` and `probe --gather` wrote `NAME.part` beside the target with
an open that follows a link: anybody who could write the target's directory (/tmp) planted a
link at that name and root's output landed in the file it named. Each test plants a link at
every name the old code used, and at the target, pointing to a file outside; that file must
come out unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from tests.cli import iotuner
from tests.report.conftest import WORKLOAD
from tuner.errors import BadInput
from tuner.outfile import write_file
from tuner.trust import Untrusted

PRECIOUS = b"the victim's own bytes\n"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("out") / "host", Shape(disks=2, controllers=1))


def shared_dir(tmp_path: Path) -> Path:
    """A directory anybody may write, sticky like /tmp, where the output is asked for."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def victim(tmp_path: Path) -> Path:
    outside = tmp_path / "victim"
    outside.write_bytes(PRECIOUS)
    return outside


def plant(link: Path, target: Path) -> None:
    link.symlink_to(target)


def test_report_out_does_not_follow_a_link_planted_at_its_temporary(
    host: Path, tmp_path: Path
) -> None:
    shared, outside = shared_dir(tmp_path), victim(tmp_path)
    out = shared / "report.html"
    for name in (f".{out.name}.tmp", f"{out.name}.part", f".{out.name}.part"):
        plant(shared / name, outside)
    proc = iotuner("report", "--root", str(host), "--workload", WORKLOAD, "--out", str(out),
                   state=tmp_path / "state", timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert outside.read_bytes() == PRECIOUS
    assert "<html" in out.read_text() and not out.is_symlink()


def test_report_out_replaces_a_link_planted_at_the_target(host: Path, tmp_path: Path) -> None:
    shared, outside = shared_dir(tmp_path), victim(tmp_path)
    out = shared / "report.html"
    plant(out, outside)
    proc = iotuner("report", "--root", str(host), "--workload", WORKLOAD, "--out", str(out),
                   state=tmp_path / "state", timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert outside.read_bytes() == PRECIOUS
    assert not out.is_symlink() and "<html" in out.read_text()


def test_probe_gather_does_not_follow_a_link_planted_at_its_temporary(
    host: Path, tmp_path: Path
) -> None:
    shared, outside = shared_dir(tmp_path), victim(tmp_path)
    out = shared / "host.tar.xz"
    for name in (f"{out.name}.part", f".{out.name}.tmp"):
        plant(shared / name, outside)
    proc = iotuner("probe", "--root", str(host), "--gather", str(out))
    assert proc.returncode == 0, proc.stderr
    assert outside.read_bytes() == PRECIOUS
    assert out.read_bytes()[:6] == b"\xfd7zXZ\x00"
    replay = iotuner("probe", "--root", str(out), "--json")
    assert replay.returncode == 0, replay.stderr


def test_probe_gather_replaces_a_link_planted_at_the_target(host: Path, tmp_path: Path) -> None:
    shared, outside = shared_dir(tmp_path), victim(tmp_path)
    out = shared / "host.tar.xz"
    plant(out, outside)
    proc = iotuner("probe", "--root", str(host), "--gather", str(out))
    assert proc.returncode == 0, proc.stderr
    assert outside.read_bytes() == PRECIOUS and not out.is_symlink()


def test_advise_plan_out_replaces_a_link_planted_at_the_target(host: Path, tmp_path: Path) -> None:
    shared, outside = shared_dir(tmp_path), victim(tmp_path)
    plan = shared / "plan.yaml"
    plant(plan, outside)
    proc = iotuner("advise", "--root", str(host), "--plan-out", str(plan))
    assert proc.returncode in (0, 1), proc.stderr
    assert outside.read_bytes() == PRECIOUS and not plan.is_symlink()
    assert plan.read_text().startswith("# iotuner plan")


def test_write_file_leaves_no_temporary_and_sets_the_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    write_file(out, "text\n", mode=0o640)
    assert out.read_text() == "text\n"
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "control"])
def test_write_file_refuses_what_it_must_not_replace(tmp_path: Path, kind: str) -> None:
    out = tmp_path / ("a\nb" if kind == "control" else "target")
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "directory":
        out.mkdir()
    with pytest.raises(BadInput) as raised:
        write_file(out, b"x")
    assert "\n" not in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if kind == "control" else ["target"])


def test_write_file_refuses_a_missing_directory_and_a_long_name(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot write"):
        write_file(tmp_path / "no" / "such.txt", b"x")
    with pytest.raises(BadInput, match="cannot write"):
        write_file(tmp_path / ("n" * 300), b"x")
    assert list(tmp_path.iterdir()) == []


def test_trusted_write_refuses_a_linked_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(Untrusted):
        write_file(tmp_path / "link" / "m.prom", b"x", trusted=True)
    assert list(real.iterdir()) == []
