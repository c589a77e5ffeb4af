"""Fuzzing output paths: generated `report --out`, `probe --gather` and `advise --plan-out`.

Each path is built in a sandbox from hostile parts: control characters, components of 255 and
more bytes, "." and "..", a directory, a FIFO, a missing directory, a link to a file outside,
and links planted first at every temporary name iotuner ever used beside its output
(`.NAME.tmp`, `NAME.part`). Every path is written safely (a regular file where it names, not
a link) or refused with one line, exit 2; nothing outside the sandbox's own output area
changes, whatever the path (issue 27).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.synthetic_host import Shape, build
from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tuner.cli import app
from tuner.errors import BadInput

_COMMANDS = ("report", "gather", "plan-out")
_PARTS = [
    "out", "dir", "missing", "fifo", "to-victim", "to-dir", ".", "..", "", "a\nb", "\x1b[31m",
    "x\x00y", "[red]x[/]", "$HOME", "n" * 255, "n" * 256, "é" * 128, " ", "-", "--help",
]  # fmt: skip
_SUFFIXES = ["", ".html", ".tar.xz", ".yaml", ".txz"]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("paths") / "host", Shape(disks=1, controllers=1))


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root` (not followed): its kind and, for a file, its content's hash."""
    seen: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            if path.is_symlink():
                seen[str(path)] = "link " + os.readlink(path)
            elif path.is_file():
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                seen[str(path)] = "other"
    return seen


def sandbox(top: Path, final: str) -> tuple[Path, Path]:
    """(the output area, the outside) with the hostile entries planted in the output area."""
    area, outside = top / "area", top / "outside"
    area.mkdir()
    area.chmod(0o1777)  # shared, like /tmp
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("the victim's own bytes\n")
    (area / "dir").mkdir()
    os.mkfifo(area / "fifo")
    (area / "to-victim").symlink_to(victim)
    (area / "to-dir").symlink_to(area / "dir")
    for folder in (area, area / "dir"):
        for name in (f".{final}.tmp", f"{final}.part", f".{final}.part"):
            if name.isprintable() and len(os.fsencode(name)) <= 255 and "/" not in name:
                (folder / name).symlink_to(victim)
    return area, outside


def run(command: str, host: Path, out: str, state: Path) -> tuple[int, BaseException | None]:
    """The command line run in this process; (exit code, the exception it ended with)."""
    args = {
        "report": ["report", "--root", str(host), "--workload", "disk-to-network", "--out", out],
        "gather": ["probe", "--root", str(host), "--gather", out],
        "plan-out": ["advise", "--root", str(host), "--plan-out", out],
    }[command]
    os.environ["IOTUNER_STATE_DIR"] = str(state)
    try:
        result = CliRunner().invoke(app, args, catch_exceptions=True)
    finally:
        del os.environ["IOTUNER_STATE_DIR"]
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return result.exit_code, exc


def check(command: str, host: Path, parts: list[str], suffix: str) -> None:
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-paths-") as tmp:
        top = Path(tmp)
        area, outside = sandbox(top, (parts[-1] if parts else "") + suffix)
        before = snapshot(outside)
        out = "/".join([str(area), *parts]) + suffix
        with within():
            code, exc = run(command, host, out, top / "state")
        if isinstance(exc, BadInput):
            refused_well(exc)
            note(f"{command}: refused")
        else:
            assert exc is None, f"{out!r}: {type(exc).__name__}: {exc}"
            if code == 2:  # a usage error typer printed itself: one line is not asked of it
                note(f"{command}: usage error")
            else:
                assert code in (0, 1), (code, out)
                written = Path(out)
                assert written.is_file() and not written.is_symlink(), out
                assert not written.resolve().is_relative_to(outside), out  # ".." is the user's
                note(f"{command}: written")
        assert snapshot(outside) == before, out


@FUZZ
@given(
    command=st.sampled_from(_COMMANDS),
    parts=st.lists(st.one_of(st.sampled_from(_PARTS), st.text(max_size=12)), min_size=1,
                   max_size=4),
    suffix=st.sampled_from(_SUFFIXES),
)  # fmt: skip
def test_generated_output_paths(host: Path, command: str, parts: list[str], suffix: str) -> None:
    check(command, host, parts, suffix)


def _corpus_cases() -> Iterator[Path]:
    yield from corpus("paths")


@pytest.mark.parametrize("case", _corpus_cases(), ids=lambda p: p.name)
def test_corpus(host: Path, case: Path) -> None:
    command, suffix, *parts = case.read_text().split("\t")
    check(command, host, [p.rstrip("\n") for p in parts], suffix)
