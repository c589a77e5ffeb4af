"""The modelled hard disk in a spec: its allow-listed fields, bounds, one-line errors, and the
formulas its service times are held against."""

from __future__ import annotations

import pytest

from tests.lab.conftest import plugin_text
from tuner.errors import BadInput
from tuner.lab import load_spec, parse_spec
from tuner.lab.build import memory_needed
from tuner.lab.hdd import (
    HddModel,
    geometry,
    mean_random_seek_s,
    random_read_s,
    seek_s,
    stream_mbps,
    zone_rate_mbps,
)
from tuner.lab.modelled import plugin_params

GIB = 1 << 30


def test_the_builtin_hdd() -> None:
    spec = load_spec("hdd")
    (disk,) = spec.disks
    assert disk.model == HddModel()  # the built-in spells out the defaults
    assert (disk.read_mbps, disk.iops, disk.bus, disk.size_bytes) == (200, 0, None, 2 * GIB)
    assert memory_needed(spec) == 2 * GIB  # its data file, filled only as it is written


def test_the_second_builtin_hdd_differs_in_rpm_zones_and_cache() -> None:
    (disk,) = load_spec("hdd-5400").disks
    model = disk.model
    assert isinstance(model, HddModel)
    assert (model.rpm, model.zones, model.cache_kib) == (5400, 24, 8192)
    assert (disk.read_mbps, disk.size_bytes) == (120, 2 * GIB)
    # The comment's figure: 52.4 random 4 KiB reads a second at depth 1.
    assert 1 / random_read_s(model, disk.size_bytes, 4096) == pytest.approx(52.4, abs=0.1)


def test_a_model_with_only_its_kind_takes_the_defaults() -> None:
    spec = parse_spec("disks: [{name: d0, size: 1GiB, fs: xfs, model: {kind: hdd}}]", "x.yaml", "x")
    assert spec.disks[0].model == HddModel()
    assert spec.disks[0].fs == "xfs"
    fast = parse_spec(
        "disks: [{name: d0, size: 1GiB, model: {kind: hdd, rpm: 15000, outer_mbps: 250,"
        " inner_mbps: 250, zones: 1, seek_full_ms: 8, queue_depth: 1, seed: 7}}]",
        "x.yaml",
        "x",
    ).disks[0]
    assert fast.model == HddModel(
        rpm=15000, outer_mbps=250, inner_mbps=250, zones=1, seek_full_ms=8, queue_depth=1, seed=7
    )
    assert fast.read_mbps == fast.write_mbps == 250


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("hdd", "model must be a mapping like {kind: hdd, rpm: 7200}, got str"),
        ("{rpm: 7200}", "model: kind must be one of hdd, ssd, raid0, raid5, got None"),
        ("{kind: flash}", "model: kind must be one of hdd, ssd, raid0, raid5, got 'flash'"),
        ("{kind: hdd, read_us: 3}", "model: unknown key 'read_us' (known: kind, rpm"),
        ("{kind: hdd, speed: 3}", "model: unknown key 'speed' (known: kind, rpm, outer_mbps"),
        ("{kind: hdd, rpm: 100000}", "rpm must be an integer from 3600 to 15000, got 100000"),
        ("{kind: hdd, rpm: 7200.5}", "rpm must be an integer from 3600 to 15000, got 7200.5"),
        ("{kind: hdd, rpm: true}", "model: rpm must be an integer from 3600 to 15000, got True"),
        ("{kind: hdd, outer_mbps: f}", "outer_mbps must be a number from 10 to 1000, got 'f"),
        ("{kind: hdd, outer_mbps: .nan}", "outer_mbps must be a number from 10 to 1000, got nan"),
        ("{kind: hdd, overhead_ms: -1}", "overhead_ms must be a number from 0 to 5, got -1"),
        ("{kind: hdd, queue_depth: 0}", "queue_depth must be an integer from 1 to 32, got 0"),
        ("{kind: hdd, queue_depth: 64}", "queue_depth must be an integer from 1 to 32, got 64"),
        ("{kind: hdd, cache_kib: 1e9}", "cache_kib must be an integer from 0 to 262144"),
        ("{kind: hdd, seed: -1}", "seed must be an integer from 0 to 2.14748e+09, got -1"),
        ("{kind: hdd, zones: 65}", "zones must be an integer from 1 to 64, got 65"),
        ("{kind: hdd, outer_mbps: 100, inner_mbps: 150}",
         "model: inner_mbps 150 is above outer_mbps 100 (the outer zone is the fast one)"),
        ("{kind: hdd, seek_track_ms: 5, seek_full_ms: 2}",
         "model: seek_full_ms 2 is below seek_track_ms 5"),
    ],
)  # fmt: skip
def test_malformed_models(model: str, message: str) -> None:
    text = f"disks: [{{name: d0, size: 1GiB, model: {model}}}]"
    with pytest.raises(BadInput) as err:
        parse_spec(text, "x.yaml", default_name="x")
    assert str(err.value).startswith("x.yaml: disks[0] (d0): ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("disk", "message"),
    [
        ("{name: d0, size: 1GiB, iops: 100, model: {kind: hdd}}",
         "disks[0] (d0): iops is a throttled disk's ceiling; a modelled disk has its model"),
        ("{name: d0, size: 1GiB, read_mbps: 100, model: {kind: hdd}}",
         "read_mbps is a throttled disk's ceiling"),
        ("{name: d0, size: 128MiB, model: {kind: hdd}}",
         "disks[0] (d0): a modelled disk needs at least 256 MiB"),
    ],
)  # fmt: skip
def test_a_modelled_disk_has_no_ceilings(disk: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_spec(f"disks: [{disk}]", "x.yaml", default_name="x")
    assert message in str(err.value)


def test_modelled_disks_share_a_bus_but_sit_in_no_stripe() -> None:
    bus = "buses: [{name: b0, read_mbps: 250, write_mbps: 250}]\n"
    on_bus = parse_spec(
        bus + "disks: [{name: d0, bus: b0, size: 1GiB, model: {kind: hdd}},"
        " {name: d1, bus: b0, size: 1GiB, model: {kind: hdd}}]",
        "x.yaml",
        default_name="x",
    )
    assert [d.bus for d in on_bus.disks] == ["b0", "b0"] and on_bus.modelled_bus("b0")
    assert memory_needed(on_bus) == 2 * GIB  # no bus image: the disks' data files alone
    mixed = (
        bus + "disks: [{name: d0, bus: b0, size: 1GiB, model: {kind: hdd}},"
        " {name: d1, bus: b0, size: 1GiB, read_mbps: 1, write_mbps: 1, iops: 9}]"
    )
    with pytest.raises(BadInput, match=r"bus 'b0': carries modelled disks \['d0'\] and thr"):
        parse_spec(mixed, "x.yaml", default_name="x")
    uneven = (
        "buses: [{name: b0, read_mbps: 250, write_mbps: 200}]\n"
        "disks: [{name: d0, bus: b0, size: 1GiB, model: {kind: hdd}}]"
    )
    with pytest.raises(BadInput, match="read_mbps 250 and write_mbps 200 must be equal"):
        parse_spec(uneven, "x.yaml", default_name="x")
    striped = (
        "stripe: btrfs-raid0\n"
        "disks: [{name: d0, size: 1GiB, model: {kind: hdd}},"
        " {name: d1, size: 1GiB, model: {kind: hdd}}]"
    )
    with pytest.raises(BadInput, match=r"stripe: is not built over modelled disks yet"):
        parse_spec(striped, "x.yaml", default_name="x")


def test_plugin_params_name_every_field() -> None:
    params = plugin_params(HddModel(), 2 * GIB, "/dev/shm/x/d0.data")
    assert params[:2] == ["file=/dev/shm/x/d0.data", f"size={2 * GIB}"]
    assert "rpm=7200" in params and "queue_depth=32" in params and "seed=1" in params
    assert not any(p.startswith("kind=") for p in params)
    # hdd.c (with the headers beside it) reads exactly these keys (and refuses any other).
    source = plugin_text("hdd")
    for param in params:
        assert f'strcmp (key, "{param.split("=")[0]}")' in source


def test_geometry_and_formulas() -> None:
    model = HddModel()
    geo = geometry(model, 2 * GIB)
    assert geo.rates[0] == 200e6 and geo.rates[-1] == 100e6
    assert geo.track_bytes[0] == pytest.approx(200e6 * 60 / 7200)
    assert sum(geo.zone_bytes(z) for z in range(16)) == pytest.approx(2 * GIB)
    assert zone_rate_mbps(model, 2 * GIB, 0) == 200
    assert zone_rate_mbps(model, 2 * GIB, 2 * GIB - 1) < 110  # the last zone in use
    assert stream_mbps(model, 2 * GIB, 0, 256 << 20) == pytest.approx(197.8, abs=0.1)
    assert stream_mbps(model, 2 * GIB, 2 * GIB - (256 << 20), 256 << 20) < 110
    assert seek_s(model, 0, geo.tracks) == 0
    assert seek_s(model, 1, geo.tracks) == pytest.approx(1e-3)
    assert seek_s(model, geo.tracks, geo.tracks) == pytest.approx(16e-3)
    # Uniform over tracks, E[sqrt(|u - v|)] = 8/15; uniform over bytes the outer (denser)
    # zones weigh more and the seeks get a little shorter.
    assert 8e-3 < mean_random_seek_s(model, 2 * GIB) < 1e-3 + 15e-3 * 8 / 15
    service = random_read_s(model, 2 * GIB, 4096)
    assert service == pytest.approx(
        0.2e-3 + mean_random_seek_s(model, 2 * GIB) + 60 / 7200 / 2, rel=0.003
    )
