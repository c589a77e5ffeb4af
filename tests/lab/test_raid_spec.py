"""The modelled RAID set and shared bus in a spec: allow-listed fields, bounds, one-line errors,
the plugin's parameters, and the member commands each request costs."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.lab.conftest import plugin_text
from tuner.codec import decode, encode
from tuner.errors import BadInput
from tuner.lab import load_spec, parse_spec
from tuner.lab.build import memory_needed
from tuner.lab.hdd import HddModel
from tuner.lab.model import LabDisk
from tuner.lab.modelled import describe, plugin_params
from tuner.lab.raid import RaidModel, RaidStats, member_commands, read_stats, stats_path

GIB = 1 << 30
KIB = 1 << 10


def test_the_builtin_raid5() -> None:
    spec = load_spec("raid5")
    (disk,) = spec.disks
    assert disk.model == RaidModel("raid5", 4, 64, HddModel(outer_mbps=100, inner_mbps=50))
    assert disk.model.full_stripe_bytes == 192 * KIB
    assert disk.model.member_bytes(disk.size_bytes) == GIB  # 3 GiB over 3 data members
    assert (disk.read_mbps, disk.iops, disk.bus) == (300, 0, None)  # 3 data members x 100
    assert memory_needed(spec) == 3 * GIB  # the array's data; parity is timed, not stored
    assert describe(disk.model) == ("300 MB/s", "raid5 4 x hdd 7200 rpm, 64 KiB")


def test_the_builtin_three_hdds_on_one_bus() -> None:
    spec = load_spec("three-hdds-one-bus")
    assert [(d.bus, d.read_mbps) for d in spec.disks] == [("bus0", 100)] * 3
    assert spec.modelled_bus("bus0") and memory_needed(spec) == 3 * GIB
    seeds = [d.model.seed for d in spec.disks if isinstance(d.model, HddModel)]
    assert seeds == [1, 2, 3]  # platters not in step


def test_a_raid_with_only_its_kind_takes_the_defaults() -> None:
    spec = parse_spec("disks: [{name: r0, size: 1GiB, model: {kind: raid0}}]", "x.yaml", "x")
    assert spec.disks[0].model == RaidModel("raid0", 4, 64, HddModel())
    assert spec.disks[0].read_mbps == 800  # 4 members x 200, no parity


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("{kind: raid5, members: 2}", "model: raid5 needs at least 3 members, got 2"),
        ("{kind: raid0, members: 1}", "model: members must be an integer from 2 to 16, got 1"),
        ("{kind: raid0, members: 17}", "model: members must be an integer from 2 to 16, got 17"),
        ("{kind: raid5, stripe_kib: 2}", "stripe_kib must be an integer from 4 to 4096, got 2"),
        ("{kind: raid5, stripe_kib: 64.5}", "stripe_kib must be an integer from 4 to 4096"),
        ("{kind: raid5, rpm: 7200}", "model: unknown key 'rpm' (known: kind, members, stripe_kib,"
                                     " member, eio, slow)"),
        ("{kind: raid5, member: hdd}", "model: member must be a mapping like {kind: hdd, rpm: "),
        ("{kind: raid5, member: {kind: ssd}}", "model: member must be a mapping like {kind: hdd"),
        ("{kind: raid5, member: {eio: [0, 1MiB]}}", "model: member: unknown key 'eio' (known: "),
        ("{kind: raid5, member: {rpm: 100}}",
         "model: member: rpm must be an integer from 3600 to 15000, got 100"),
        ("{kind: raid5, member: {outer_mbps: 50, inner_mbps: 60}}",
         "model: member: inner_mbps 60 is above outer_mbps 50"),
        ("{kind: raid5, eio: [2GiB, 1MiB]}", "model: eio [2147483648, 1048576] must be a non-"),
    ],
)  # fmt: skip
def test_malformed_raids(model: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_spec(f"disks: [{{name: r0, size: 1GiB, model: {model}}}]", "x.yaml", "x")
    assert str(err.value).startswith("x.yaml: disks[0] (r0): ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert err.value.exit_code == 2


def test_plugin_params_name_every_field() -> None:
    model = RaidModel("raid5", 5, 32, HddModel(rpm=10000))
    params = plugin_params(model, GIB, "/dev/shm/x/r0.data")
    assert params[:3] == ["file=/dev/shm/x/r0.data", f"size={GIB}", "level=5"]
    assert "stats=/dev/shm/x/r0.stats" in params and "members=5" in params
    assert "stripe_kib=32" in params and "rpm=10000" in params
    assert not any(p.startswith(("kind=", "faults=", "member=")) for p in params)
    # raid.c (with the headers it includes) reads exactly these keys.
    source = plugin_text("raid5")
    for param in [*params, "bus_file=/x", "bus_mbps=1"]:
        assert f'strcmp (key, "{param.split("=")[0]}")' in source, param


@pytest.mark.parametrize(
    ("kind", "offset", "length", "write", "commands"),
    [
        ("raid5", 4 * KIB, 4 * KIB, True, (2, 2)),  # read old data and parity, write both
        ("raid5", 0, 192 * KIB, True, (0, 4)),  # a whole stripe: 3 data + parity, no read
        ("raid5", 0, 384 * KIB, True, (0, 4)),  # two whole stripes, merged on each member
        ("raid5", 64 * KIB, 192 * KIB, True, (3, 3)),  # misaligned: two partial stripes
        ("raid5", 0, 1 << 20, False, (8, 0)),  # reads skip parity, so pieces do not merge
        ("raid0", 4 * KIB, 4 * KIB, True, (0, 1)),
        ("raid0", 0, 1 << 20, False, (0, 0)),  # placeholder replaced below
    ],
)
def test_member_commands(
    kind: str, offset: int, length: int, write: bool, commands: tuple[int, int]
) -> None:
    model = RaidModel(kind, 4, 64)
    if kind == "raid0" and length == 1 << 20:
        commands = (4, 0)  # 16 units over 4 members, contiguous on each
    assert member_commands(model, offset, length, write) == commands


def test_stats_are_read_from_the_plugins_file(tmp_path: Path) -> None:
    path = stats_path(tmp_path / "r0.data")
    assert path == tmp_path / "r0.stats"
    words = [3, 10, 20, 5, 15, 0, 0, 0] + [1, 2, 3, 4] * 3 + [0] * 4 * 13
    path.write_bytes(struct.pack(f"<{len(words)}Q", *words))
    stats = read_stats(path)
    assert stats == RaidStats(10, 20, 5, 15, (1, 1, 1), (2, 2, 2))
    assert (stats - stats).member_commands == 0 and stats.member_commands == 9
    path.write_bytes(struct.pack("<8Q", 99, 0, 0, 0, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="not a RAID stats file"):
        read_stats(path)


def test_a_lab_disk_with_a_raid_survives_its_record() -> None:
    disk = LabDisk("r0", "/dev/loop9", "b0", 600, 600, 0, GIB, RaidModel(member=HddModel(rpm=5400)))
    assert decode(LabDisk, encode(disk)) == disk
