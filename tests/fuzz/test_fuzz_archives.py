"""Fuzzing capture archives: `probe --root ARCHIVE` given corrupt, truncated, bombed, hostile ones.

Each example packs the `hdd-scheduler-none` scenario (tests/fixtures/scenarios.py) as `probe
--gather` would, in one of the formats `--root` takes, then damages it: bytes cut off or
overwritten, junk appended, a member no capture holds (a FIFO, a device, a link out of the
tree, an absolute or `..` name, a 300-byte name, a header claiming gigabytes, a second top
directory). `open_root` must unpack it and the probe read it, or refuse it with one line
(BadInput, exit 2); never a traceback, never more than the time limit, nothing left unpacked.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probes.host import probe_host
from probes.host_root import open_root
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tuner.errors import BadInput

FORMATS = {".tar.xz": "w:xz", ".tar.gz": "w:gz", ".tar.bz2": "w:bz2", ".tar": "w"}
HOSTILE = {
    "fifo": ("host/sys/fifo", tarfile.FIFOTYPE, ""),
    "device": ("host/sys/block/sda/dev", tarfile.BLKTYPE, ""),
    "chardev": ("host/proc/kmsg", tarfile.CHRTYPE, ""),
    "symlink-out": ("host/sys/out", tarfile.SYMTYPE, "../../../../etc/passwd"),
    "symlink-abs": ("host/sys/abs", tarfile.SYMTYPE, "/etc/shadow"),
    "hardlink-out": ("host/sys/hard", tarfile.LNKTYPE, "/etc/passwd"),
    "absolute": ("/tmp/iotuner-fuzz-escape", tarfile.REGTYPE, ""),
    "dotdot": ("host/../../iotuner-fuzz-escape", tarfile.REGTYPE, ""),
    "long-name": ("host/" + "a" * 300, tarfile.REGTYPE, ""),
    "second-top": ("other", tarfile.DIRTYPE, ""),
    "newline-markup": ("host/proc/x\n[red]y[/]", tarfile.REGTYPE, ""),
    "huge-declared": ("host/proc/interrupts2", tarfile.REGTYPE, ""),
}


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="iotuner-fuzz-archive-base-"))
    build_scenario("hdd-scheduler-none", where / "host")
    try:
        yield where / "host"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def pack(root: Path, suffix: str, hostile: str | None) -> bytes:
    """The tree at `root` as a capture under "host/", plus one hostile member."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=FORMATS[suffix]) as tar:  # type: ignore[call-overload]
        tar.add(root, arcname="host")
        if hostile is not None:
            name, kind, link = HOSTILE[hostile]
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            if hostile == "huge-declared":
                info.size = 1 << 40  # the header says a TiB; no data follows
                tar.fileobj.write(info.tobuf())  # type: ignore[union-attr]
            else:
                tar.addfile(info, io.BytesIO(b"1") if kind == tarfile.REGTYPE else None)
                if kind == tarfile.REGTYPE:
                    info.size = 1
    return out.getvalue()


def damage(data: bytes, how: str, where: float, junk: bytes) -> bytes:
    """`data` cut at `where` (a fraction), overwritten there with `junk`, or with it appended."""
    at = int(len(data) * where)
    if how == "truncate":
        return data[:at]
    if how == "overwrite":
        return data[:at] + junk + data[at + len(junk) :]
    if how == "append":
        return data + junk
    return data


def handled(path: Path, unpack_dir: Path) -> str:
    """Open `path` as `probe --root` does and probe it; 'probed' or 'refused'."""
    before = set(unpack_dir.iterdir())
    with within():
        try:
            with ExitStack() as stack:
                root = open_root(path, stack)
                probe_host(HostFS(root))
            outcome = "probed"
        except BadInput as err:
            message = refused_well(err)
            # Named as the file, or as the option that gave it (a capture that unpacks to no
            # sys/ tree is refused as "--root FILE: no sys/ tree ...", probes/host_root.py).
            assert message.startswith((f"{path}: ", f"--root {path}: ")), message
            outcome = "refused"
    assert set(unpack_dir.iterdir()) == before, "an unpacked capture was left behind"
    assert not Path("/tmp/iotuner-fuzz-escape").exists()
    note(outcome)
    return outcome


@pytest.fixture(scope="module")
def unpack_dir() -> Iterator[Path]:
    """Captures unpack into this module's own directory, so what a run leaves there is seen
    (module-scoped: hypothesis runs every example in one call of the test)."""
    where = Path(tempfile.mkdtemp(prefix="iotuner-fuzz-unpack-"))
    previous, tempfile.tempdir = tempfile.tempdir, str(where)
    try:
        yield where
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(where, ignore_errors=True)


@FUZZ
@given(
    suffix=st.sampled_from(sorted(FORMATS)),
    hostile=st.one_of(st.none(), st.sampled_from(sorted(HOSTILE))),
    how=st.sampled_from(["none", "truncate", "overwrite", "append"]),
    where=st.floats(0.0, 1.0),
    junk=st.binary(min_size=1, max_size=64),
)
def test_generated_archives(
    base: Path,
    unpack_dir: Path,
    suffix: str,
    hostile: str | None,
    how: str,
    where: float,
    junk: bytes,
) -> None:
    data = damage(pack(base, suffix, hostile), how, where, junk)
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-archive-", dir="/tmp") as folder:
        path = Path(folder) / f"capture{suffix}"
        path.write_bytes(data)
        outcome = handled(path, unpack_dir)
    if hostile is not None and hostile != "newline-markup" and how == "none":
        assert outcome == "refused", hostile


@pytest.mark.parametrize("path", corpus("archives"), ids=lambda p: p.name)
def test_archives_that_once_failed(path: Path, unpack_dir: Path) -> None:
    """Each corpus file is an archive `probe --root` once answered with a traceback."""
    assert handled(path, unpack_dir) == "refused"
