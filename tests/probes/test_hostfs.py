"""HostFS: reads inside its root, follows links there, and turns bad files into warnings."""

from __future__ import annotations

import os

import pytest

from probes.hostfs import (
    MAX_CPU_ENTRIES,
    MAX_CPUS,
    MAX_FILE_BYTES,
    HostFS,
    parse_cpulist,
    parse_cpumask,
    read_cpulist,
)
from tests.sysfs_tree import SysTree


def test_relative_and_absolute_links_resolve_inside_the_root(tree: SysTree) -> None:
    tree.file("sys/devices/pci0000:00/0000:00:1f.2/vendor", "0x8086")
    tree.link_to("sys/bus/pci/devices/0000:00:1f.2", "sys/devices/pci0000:00/0000:00:1f.2")
    # An absolute target names the captured machine's /sys, not ours.
    tree.link("sys/class/x/abs", "/sys/devices/pci0000:00/0000:00:1f.2")
    fs = HostFS(tree.root)
    assert fs.realpath("sys/bus/pci/devices/0000:00:1f.2") == "sys/devices/pci0000:00/0000:00:1f.2"
    assert fs.read("sys/class/x/abs/vendor") == "0x8086"
    assert fs.read_int("sys/bus/pci/devices/0000:00:1f.2/vendor") == 0x8086
    assert fs.warnings == []


def test_dangling_and_looping_links_read_as_missing(tree: SysTree) -> None:
    tree.link("sys/block/sdz", "../devices/gone/sdz")
    tree.link("sys/loop/a", "b").link("sys/loop/b", "a")
    fs = HostFS(tree.root)
    assert fs.realpath("sys/block/sdz") is None
    assert fs.read("sys/block/sdz/size") is None
    assert fs.realpath("sys/loop/a") is None
    assert fs.listdir("sys/block/sdz") == []


def test_malformed_integer_is_a_warning_naming_the_file(tree: SysTree) -> None:
    tree.file("sys/block/sda/size", "12x4")
    fs = HostFS(tree.root)
    assert fs.read_int("sys/block/sda/size") is None
    assert fs.warnings == ["sys/block/sda/size: expected an integer, got '12x4'"]


def test_expected_missing_and_unreadable_files_warn(tree: SysTree) -> None:
    tree.file("sys/secret", "1")
    os.chmod(tree.root / "sys/secret", 0)
    tree.dir("sys/adir")
    fs = HostFS(tree.root)
    assert fs.read("sys/nothing", expected=True) is None
    assert fs.read("sys/adir") is None
    assert fs.warnings[0] == "sys/nothing: missing"
    assert "sys/adir: is a directory" in fs.warnings[1]
    if os.geteuid() != 0:  # root reads through mode 0
        assert fs.read("sys/secret", expected=True) is None


def test_listdir_records_entries_for_capture(tree: SysTree) -> None:
    tree.file("sys/block/sda/size", 8).file("sys/block/sdb/size", 8)
    fs = HostFS(tree.root)
    assert fs.listdir("sys/block") == ["sda", "sdb"]
    assert {"sys/block/sda", "sys/block/sdb"} <= fs.touched


def test_cpu_lists_and_masks() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpulist("") == ()
    assert parse_cpumask("00000000,000000ff") == tuple(range(8))
    assert parse_cpumask("0000,00000022,22222222") == (1, 5, 9, 13, 17, 21, 25, 29, 33, 37)


def test_malformed_cpulist_warns(tree: SysTree) -> None:
    tree.file("sys/devices/system/cpu/online", "0-a")
    fs = HostFS(tree.root)
    assert read_cpulist(fs, "sys/devices/system/cpu/online") is None
    assert "expected a CPU list" in fs.warnings[0]


# -- hostile trees (issue 17): readers that cannot be stalled or blown up --------------------


def test_a_fifo_where_a_file_should_be_is_a_warning_not_a_hang(tree: SysTree) -> None:
    tree.dir("sys/block/sda/queue")
    os.mkfifo(tree.root / "sys/block/sda/queue/read_ahead_kb")
    fs = HostFS(tree.root)
    assert fs.read("sys/block/sda/queue/read_ahead_kb") is None
    assert fs.warnings == ["sys/block/sda/queue/read_ahead_kb: not a regular file"]


def test_a_file_larger_than_any_kernel_file_is_not_read(tree: SysTree) -> None:
    tree.dir("proc")
    with open(tree.root / "proc/interrupts", "wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)
    fs = HostFS(tree.root)
    assert fs.read("proc/interrupts") is None
    assert fs.warnings == [f"proc/interrupts: larger than {MAX_FILE_BYTES} bytes; not read"]


def test_nul_and_newline_endings_are_tolerated(tree: SysTree) -> None:
    # hwloc's 128arm capture: every node's cpulist ends in "\n\0".
    tree.dir("sys/devices/system/node/node0")
    (tree.root / "sys/devices/system/node/node0/cpulist").write_bytes(b"0-31\n\0")
    fs = HostFS(tree.root)
    assert read_cpulist(fs, "sys/devices/system/node/node0/cpulist") == tuple(range(32))
    assert fs.warnings == []


@pytest.mark.parametrize(
    "text", ["0-4294967295", "4294967295", "0-65536", "70000", "0-99999999999999999999"]
)
def test_cpu_lists_beyond_any_machine_are_malformed_not_memory_errors(text: str) -> None:
    with pytest.raises(ValueError, match="beyond"):
        parse_cpulist(text)


def test_cpu_lists_take_ascii_digits_and_the_kernels_group_syntax() -> None:
    for text in ("²", "٣", "1_0", "+1", "0-²", "1 2"):
        with pytest.raises(ValueError):
            parse_cpulist(text)
    assert parse_cpulist("0-7:2/4") == (0, 1, 4, 5)
    assert parse_cpulist("8-11,0-1") == (0, 1, 8, 9, 10, 11)


def test_cpu_masks_are_bounded_and_hex_only() -> None:
    with pytest.raises(ValueError, match="beyond"):
        parse_cpumask(",".join(["ffffffff"] * (MAX_CPUS // 32 + 1)))
    with pytest.raises(ValueError):
        parse_cpumask("0000,00zz")


def test_integers_are_ascii_and_within_the_callers_range(tree: SysTree) -> None:
    tree.file("sys/a", "²").file("sys/b", "-128").file("sys/c", "18446744073709551615")
    tree.file("sys/d", "1_000").file("sys/e", "0x1f")
    fs = HostFS(tree.root)
    assert fs.read_int("sys/a") is None
    assert fs.read_int("sys/b", low=0) is None
    assert fs.read_int("sys/c", low=-1, high=1023) is None
    assert fs.read_int("sys/d") is None
    assert fs.read_int("sys/e") == 0x1F
    assert fs.warnings == [
        "sys/a: expected an integer, got '²'",
        "sys/b: -128 is implausible (expected 0 or more); ignored",
        "sys/c: 18446744073709551615 is implausible (expected -1 to 1023); ignored",
        "sys/d: expected an integer, got '1_000'",
    ]


# --- captured text never carries control characters (issue 27) ------------------------------

HOSTILE = "a\x1b[2Jb\x1b]0;title\x07c\u009b31md\re\x08f\u202eg\x7fh"
"""ESC sequences (CSI, OSC with BEL), a C1 CSI, CR, backspace, a bidi override, DEL."""


def test_a_captured_file_reaches_the_model_without_control_characters(tree: SysTree) -> None:
    tree.file("sys/block/sda/device/model", HOSTILE)
    tree.file("proc/mounts", "/dev/sda / ext4 rw 0 0\n/dev/sdb /x\tfs rw 0 0")
    fs = HostFS(tree.root)
    text = fs.read("sys/block/sda/device/model")
    assert text == "a\ufffd[2Jb\ufffd]0;title\ufffdc\ufffd31md\ufffde\ufffdf\ufffdg\ufffdh"
    # Tabs and newlines of a file of several lines stay: the readers split on them.
    assert fs.read_lines("proc/mounts")[1] == "/dev/sdb /x\tfs rw 0 0"


def test_names_holding_control_characters_are_skipped_with_a_warning(tree: SysTree) -> None:
    tree.file("sys/block/sda/size", 8)
    tree.file("sys/block/sd\x1b[31mb/size", 8)
    tree.link("sys/block/sda/device", "../../devices/x\x1b]0;t\x07y")
    tree.dir("sys/devices/x\x1b]0;t\x07y")
    fs = HostFS(tree.root)
    assert fs.listdir("sys/block") == ["sda"]
    assert any("sys/block" in w and "control characters" in w for w in fs.warnings)
    assert all("\x1b" not in w for w in fs.warnings)
    assert fs.link_name("sys/block/sda/device") == "x\ufffd]0;t\ufffdy"
    assert "\x1b" not in (fs.readlink("sys/block/sda/device") or "")


# -- hostile captures (issue 27): bounded time and memory, a warning never an exception --------


def _timed(call: object, *args: str) -> tuple[object, float]:
    import time

    start = time.monotonic()
    result = call(*args)  # type: ignore[operator]
    return result, time.monotonic() - start


def test_a_64k_cpu_list_of_repeated_ranges_parses_in_bounded_time() -> None:
    text = ",".join(["0-65535"] * 8192)  # 64 KiB less one byte
    cpus, took = _timed(parse_cpulist, text)
    assert cpus == tuple(range(MAX_CPUS))
    assert took < 2.0, f"{took:.1f} s"


def test_a_cpu_list_of_distinct_strided_groups_parses_in_bounded_time() -> None:
    # Each chunk is different, so no de-duplication of repeated text can save the parser.
    chunks = [f"{start}-65535:{start % 7 + 1}/{start % 7 + 9}" for start in range(5000)]
    cpus, took = _timed(parse_cpulist, ",".join(chunks))
    assert isinstance(cpus, tuple) and cpus[0] == 0 and cpus[-1] <= MAX_CPUS - 1
    assert took < 3.0, f"{took:.1f} s"


def test_a_full_width_cpu_mask_parses_in_bounded_time() -> None:
    mask = ",".join(["ffffffff"] * (MAX_CPUS // 32))
    cpus, took = _timed(parse_cpumask, mask)
    assert cpus == tuple(range(MAX_CPUS))
    assert took < 2.0, f"{took:.1f} s"


@pytest.mark.parametrize("rel", ["sys/class/block", "sys/bus/pci/devices", "sys/class/net"])
def test_a_file_where_a_directory_belongs_is_a_warning(tree: SysTree, rel: str) -> None:
    tree.file(rel, "x")
    fs = HostFS(tree.root)
    assert fs.listdir(rel) == []
    assert fs.warnings == [f"{rel}: not a directory; its entries are not read"]


@pytest.mark.parametrize("text", ["9" * 400, "-" + "9" * 400, str(1 << 64)])
def test_integers_no_kernel_holds_are_implausible(tree: SysTree, text: str) -> None:
    tree.file("proc/sys/vm/dirty_bytes", text)
    fs = HostFS(tree.root)
    assert fs.read_int("proc/sys/vm/dirty_bytes") is None
    assert len(fs.warnings) == 1 and "implausible" in fs.warnings[0]
    assert len(fs.warnings[0]) < 200


def test_identical_cpu_lists_share_one_tuple(tree: SysTree) -> None:
    tree.file("proc/irq/1/smp_affinity_list", "0-1023").file(
        "proc/irq/2/smp_affinity_list", "0-1023"
    )
    fs = HostFS(tree.root)
    first = read_cpulist(fs, "proc/irq/1/smp_affinity_list")
    assert first is read_cpulist(fs, "proc/irq/2/smp_affinity_list")


def test_cpu_lists_stop_at_the_budget_with_a_warning(tree: SysTree) -> None:
    for n in range(80):
        tree.file(f"proc/irq/{n}/smp_affinity_list", f"{n}-65535")
    fs = HostFS(tree.root)
    read = [read_cpulist(fs, f"proc/irq/{n}/smp_affinity_list") for n in range(80)]
    assert sum(len(cpus or ()) for cpus in read) <= MAX_CPU_ENTRIES
    assert read[0] == tuple(range(MAX_CPUS)) and read[-1] is None
    assert any("CPU lists" in w and "budget" in w for w in fs.warnings)
