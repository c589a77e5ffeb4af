"""Spec files: the built-ins, and one-line errors that name the field at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.common import refused_well, within
from tests.yaml_bombs import sized_bomb
from tuner.errors import BadInput
from tuner.lab import builtin_spec_names, load_spec, parse_spec
from tuner.lab.build import bus_image_bytes, memory_needed
from tuner.lab.sizes import parse_size
from tuner.lab.spec import BTRFS_PIECE_BYTES

GOOD = """
name: mine
buses: [{name: b0, read_mbps: 250, write_mbps: 200}]
disks:
  - {name: d0, bus: b0, read_mbps: 100, write_mbps: 90, iops: 200, size: 512MiB, fs: xfs}
  - {name: d1, read_mbps: 50.5, write_mbps: 50, iops: 100, size: 256MiB}
"""


def test_builtins() -> None:
    assert builtin_spec_names() == [
        "hdd", "hdd-5400", "lan-1g", "raid0", "raid0-one-bus", "raid0-wide", "raid5",
        "single-disk", "ssd", "stripe", "three-disks-one-bus", "three-hdds-one-bus", "two-buses",
        "wan", "wan-long",
        "wan-lossy", "wan-old-buffers",
    ]  # fmt: skip
    for name in builtin_spec_names():
        spec = load_spec(name)
        assert spec.name == name
        assert spec.description
    three = load_spec("three-disks-one-bus")
    assert [d.bus for d in three.disks] == ["bus0"] * 3
    assert (three.buses[0].read_mbps, three.disks[0].read_mbps) == (250, 100)
    assert len(load_spec("two-buses").buses) == 2
    single = load_spec("single-disk").disks[0]
    assert (single.read_mbps, single.iops) == (100, 200)
    # Larger than an 8 s trial at the cap reads, plus generous readahead.
    for name in builtin_spec_names():
        for disk in load_spec(name).disks:
            assert disk.size_bytes > 8 * disk.read_mbps * 1e6 + 64 * 2**20, (name, disk)


def test_stripe_iops_leave_the_mbps_cap_binding() -> None:
    stripe = load_spec("stripe")
    assert stripe.stripe == "btrfs-raid0"
    for disk in stripe.disks:
        assert disk.iops * BTRFS_PIECE_BYTES >= disk.read_mbps * 1e6


def test_user_spec(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(GOOD)
    spec = load_spec(str(path))
    assert spec.name == "mine"
    assert spec.disks[0].fs == "xfs"
    assert spec.disks[1].bus is None
    assert spec.disks[1].read_mbps == 50.5
    assert bus_image_bytes(spec, "b0") > 512 * 2**20
    assert memory_needed(spec) == bus_image_bytes(spec, "b0") + 256 * 2**20


def test_sizes() -> None:
    assert parse_size("1GiB") == 2**30
    assert parse_size("1.5GiB") == 3 * 2**29
    assert parse_size(4096) == 4096
    assert parse_size("1 GB") is None
    assert parse_size(True) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "x.yaml: spec: expected a mapping, got list"),
        ("disks: []", "x.yaml: disks: expected a non-empty list, got list"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB, speed: 3}]",
         "x.yaml: disks[0]: unknown key 'speed'"),
        ("disks: [{name: d0, read_mbps: fast, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: disks[0] (d0): read_mbps must be a positive number of MB/s, got 'fast'"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 0, size: 1GiB}]",
         "x.yaml: disks[0] (d0): iops must be a positive integer, got 0"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GB}]",
         "x.yaml: disks[0] (d0): size must be like 1GiB or 512MiB, got '1GB'"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1MiB}]",
         "below the 64 MiB minimum"),
        ("disks: [{name: d0, bus: b9, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: disks[0] (d0): bus 'b9' is not defined (buses: none defined)"),
        ("disks: [{name: D 0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: disks[0]: name must match"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB, fs: zfs}]",
         "fs must be one of xfs, ext4, got 'zfs'"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 128MiB, fs: xfs}]",
         "x.yaml: disks[0] (d0): xfs needs at least 300 MiB"),
        ("buses: [{name: b0, read_mbps: 1, write_mbps: 1}]\n"
         "disks: [{name: b0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: disks[0]: name 'b0' is used twice"),
        ("buses: [{name: b0, read_mbps: 1, write_mbps: 1}]\n"
         "disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: bus 'b0': no disk sits on it"),
        ("stripe: md-raid0\n"
         "disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: stripe: must be one of btrfs-raid0, got 'md-raid0' (md is not available here)"),
        ("stripe: btrfs-raid0\n"
         "disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: stripe: needs at least 2 disks, got 1"),
        ("stripe: btrfs-raid0\n"
         "disks: [{name: d0, read_mbps: 100, write_mbps: 100, iops: 250, size: 1GiB},\n"
         "        {name: d1, read_mbps: 100, write_mbps: 100, iops: 2000, size: 1GiB}]",
         "x.yaml: disk 'd0': iops 250 caps a btrfs raid0 member at 16 MB/s (64 KiB pieces), "
         "below its 100 MB/s; give it at least 1526 iops"),
        ("disks:\n  - {name: d0\n", "x.yaml:3: not valid YAML"),
    ],
)  # fmt: skip
def test_malformed(text: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_spec(text, "x.yaml", default_name="x")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert err.value.exit_code == 2


def test_unknown_names(tmp_path: Path) -> None:
    built_ins = "hdd, hdd-5400, lan-1g, raid0, raid0-one-bus, raid0-wide, raid5"
    with pytest.raises(BadInput, match=f"no built-in lab spec 'nope' \\(built-ins: {built_ins}"):
        load_spec("nope")
    with pytest.raises(BadInput, match=r"missing\.yaml: no such spec file"):
        load_spec(str(tmp_path / "missing.yaml"))


# -- hostile specs (issue 27): one line, exit 2, never a traceback or a hang ------------------

DISK = "{name: d0, read_mbps: 100, write_mbps: 100, iops: 2000, size: 1GiB}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: 'lab\n\n'\ndisks: [" + DISK + "]", "x.yaml: name: must match"),  # trailing \n
        ("disks: [{name: \"d0\\n\", read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: disks[0]: name must match"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: .nan, iops: 1, size: 1GiB}]",
         "write_mbps must be a positive number of MB/s, got nan"),
        ("disks: [{name: d0, read_mbps: .inf, write_mbps: 1, iops: 1, size: 1GiB}]",
         "read_mbps must be a positive number of MB/s, got inf"),
        ("disks: [{name: d0, read_mbps: 1" + "0" * 400 + ", write_mbps: 1, iops: 1, size: 1GiB}]",
         "read_mbps must be a positive number of MB/s"),
        ("disks: [{name: d0, bus: [1], read_mbps: 1, write_mbps: 1, iops: 1, size: 1GiB}]",
         "x.yaml: disks[0] (d0): bus [1] is not defined"),
        ("disks: [" + DISK + "]\nstripe: {a: 1}", "x.yaml: stripe: must be one of"),
        ("disks: " + "[" * 10_000 + "]" * 10_000, "refused (YAML nested deeper than 64 levels)"),
        # A 400-digit size was an OverflowError; 10^43 bytes passed as a disk's size.
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: '1" + "0" * 400
         + "TiB'}]", "x.yaml: disks[0] (d0): size must be like 1GiB"),
        ("disks: [{name: d0, read_mbps: 1, write_mbps: 1, iops: 1, size: 1" + "0" * 43 + "}]",
         "x.yaml: disks[0] (d0): size must be like 1GiB"),
        ("disks: [" + DISK + "]\ndescription: 2026-02-31", "x.yaml: cannot read YAML"),
    ],
)  # fmt: skip
def test_hostile_specs_are_one_line(text: str, message: str) -> None:
    with within(2.0), pytest.raises(BadInput) as err:
        parse_spec(text, "x.yaml", default_name="x")
    assert message in refused_well(err.value)


@pytest.mark.parametrize("size", [2_000, 38_000])
def test_a_spec_of_yaml_aliases_is_refused_in_well_under_a_second(size: int) -> None:
    # The checker stops at the first field it does not know; the loader refuses before it.
    head = "disks: [" + DISK + "]\nnetwork:\n"
    with within(1.0), pytest.raises(BadInput) as err:
        parse_spec(head + sized_bomb(size - len(head), indent="  "), "x.yaml", default_name="x")
    assert "refused (more than" in refused_well(err.value)


def test_a_spec_file_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_bytes(b"name: lab\xff\n")
    with pytest.raises(BadInput) as err:
        load_spec(str(path))
    assert "lab.yaml: not UTF-8 text" in refused_well(err.value)
