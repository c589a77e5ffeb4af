"""Capture archives as `--root` takes them: hostile ones are refused with one line, in bounded
time, memory and disk (issue 27: corrupt xz, decompression bombs, members that leave the tree)."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

import pytest

from probes.gather import MAX_CAPTURE_BYTES, MAX_CAPTURE_MEMBERS, extract_capture
from probes.hostfs import MAX_FILE_BYTES

MODES = {".tar.xz": "w:xz", ".tar.gz": "w:gz", ".tar.bz2": "w:bz2", ".tar": "w"}


class Zeros(io.RawIOBase):
    """`size` zero bytes, made as they are read: a bomb without holding it in memory."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes | int | None]]) -> Path:
    """Write `members` (data, a count of zero bytes, or nothing) under one top directory."""
    mode = MODES[next(s for s in MODES if path.name.endswith(s))]
    with tarfile.open(path, mode) as tar:  # type: ignore[call-overload]
        top = tarfile.TarInfo("host")
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for info, data in members:
            if isinstance(data, bytes):
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            elif isinstance(data, int):
                info.size = data
                tar.addfile(info, Zeros(data))
            else:
                tar.addfile(info)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def good(path: Path) -> Path:
    return archive(path, [(member("host/proc/meminfo"), b"MemTotal: 1024 kB\n")])


@pytest.fixture(autouse=True)
def unpack_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Captures unpack into this test's own directory, so what a refusal leaves is seen."""
    where = tmp_path / "unpacked"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def refused(path: Path) -> str:
    with pytest.raises(ValueError) as caught:
        extract_capture(path)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith(f"{path}: ")
    # Nothing of the refused archive is left behind.
    assert list(Path(tempfile.gettempdir()).iterdir()) == []
    return message.removeprefix(f"{path}: ")


@pytest.mark.parametrize("suffix", list(MODES))
def test_a_good_capture_unpacks(tmp_path: Path, suffix: str) -> None:
    top, holder = extract_capture(good(tmp_path / f"c{suffix}"))
    try:
        assert (top / "proc/meminfo").read_text() == "MemTotal: 1024 kB\n"
    finally:
        holder.cleanup()


@pytest.mark.parametrize("suffix", [".tar.xz", ".tar.gz", ".tar.bz2"])
@pytest.mark.parametrize("damage", ["middle", "truncated", "tail"])
def test_a_corrupt_compressed_capture_is_one_line(tmp_path: Path, suffix: str, damage: str) -> None:
    path = archive(tmp_path / f"c{suffix}", [(member("host/f"), os.urandom(20000))])
    data = bytearray(path.read_bytes())
    if damage == "middle":
        data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    elif damage == "truncated":
        del data[len(data) // 2 :]
    else:
        data[-12:] = b"\xff" * 12
    path.write_bytes(bytes(data))
    assert "not a readable capture" in refused(path)


def test_a_member_larger_than_any_kernel_file_is_refused(tmp_path: Path) -> None:
    path = archive(tmp_path / "bomb.tar.gz", [(member("host/proc/interrupts"), MAX_FILE_BYTES + 1)])
    assert "host/proc/interrupts" in refused(path)


def test_members_larger_than_the_capture_bound_together_are_refused(tmp_path: Path) -> None:
    each = MAX_FILE_BYTES - 1
    count = MAX_CAPTURE_BYTES // each + 1
    path = archive(tmp_path / "bomb.tar.gz", [(member(f"host/f{n}"), each) for n in range(count)])
    assert "unpacked" in refused(path)


def test_more_members_than_the_bound_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "many.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        block = member("host/x", tarfile.DIRTYPE).tobuf()
        raw = tar.fileobj
        assert raw is not None
        for _ in range(MAX_CAPTURE_MEMBERS + 1):
            raw.write(block)
    assert "members" in refused(path)


@pytest.mark.parametrize(
    "hostile",
    [
        member("host/../../escape"),
        member("/etc/escape"),
        member("host/sys/fifo", tarfile.FIFOTYPE),
        member("host/sys/sda", tarfile.BLKTYPE),
        member("host/sys/out", tarfile.SYMTYPE, "../../../etc/passwd"),
        member("host/sys/hard", tarfile.LNKTYPE, "/etc/passwd"),
        member("host/" + "a" * 300),
    ],
    ids=["dotdot", "absolute", "fifo", "device", "symlink-out", "hardlink-out", "long-name"],
)
def test_members_that_leave_the_tree_or_are_devices_are_refused(
    tmp_path: Path, hostile: tarfile.TarInfo
) -> None:
    path = archive(tmp_path / "hostile.tar.xz", [(member("host/ok"), b"1"), (hostile, None)])
    assert "member" in refused(path)
    assert not (tmp_path / "escape").exists()
