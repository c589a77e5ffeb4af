"""The modelled flash drive and the faults of any modelled disk in a spec: allow-listed fields,
bounds, one-line errors, the plugin's parameters and the formulas the served disk is held to."""

from __future__ import annotations

import pytest

from tests.lab.conftest import plugin_text
from tuner.codec import decode, encode
from tuner.errors import BadInput
from tuner.lab import load_spec, parse_spec
from tuner.lab.faults import Faults
from tuner.lab.hdd import HddModel
from tuner.lab.model import LabDisk
from tuner.lab.modelled import plugin_params
from tuner.lab.ssd import SsdModel, iops, service_s

GIB = 1 << 30
MIB = 1 << 20


def test_the_builtin_ssd() -> None:
    (disk,) = load_spec("ssd").disks
    assert disk.model == SsdModel()  # the built-in spells out the defaults
    assert (disk.read_mbps, disk.write_mbps, disk.iops, disk.size_bytes) == (400, 400, 0, 4 * GIB)


def test_an_ssd_with_only_its_kind_takes_the_defaults_and_sizes_read_as_sizes() -> None:
    spec = parse_spec(
        "disks: [{name: d0, size: 1GiB, model: {kind: ssd, channels: 8, op_bytes: 64MiB}}]",
        "x.yaml",
        "x",
    )
    assert spec.disks[0].model == SsdModel(channels=8, op_bytes=64 * MIB)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("{kind: ssd, rpm: 7200}", "model: unknown key 'rpm' (known: kind, read_us, write_us"),
        ("{kind: ssd, channels: 0}", "model: channels must be an integer from 1 to 16, got 0"),
        ("{kind: ssd, channels: 32}", "model: channels must be an integer from 1 to 16, got 32"),
        ("{kind: ssd, read_us: .inf}", "model: read_us must be a number from 1 to 100000, got inf"),
        ("{kind: ssd, mbps: -3}", "model: mbps must be a number from 10 to 10000, got -3"),
        ("{kind: ssd, op_bytes: lots}", "model: op_bytes must be an integer from 0 to"),
        ("{kind: ssd, gc_factor: 0.5}", "model: gc_factor must be a number from 1 to 100"),
        ("{kind: ssd, eio: 5}", "model: eio must be [start, length] like [1GiB, 1MiB], got 5"),
        ("{kind: ssd, eio: [0]}", "model: eio must be [start, length]"),
        ("{kind: ssd, eio: [-1, 4096]}", "model: eio must be [start, length]"),
        ("{kind: hdd, eio: [1GiB, 1MiB]}",
         "model: eio [1073741824, 1048576] must be a non-empty region inside the disk's"),
        ("{kind: ssd, eio: [0, 0]}", "must be a non-empty region inside"),
        ("{kind: ssd, slow: 3}", "model: slow must be {after_s: S, for_s: S, factor: F}"),
        ("{kind: ssd, slow: {after_s: 1, for_s: 2}}", "(all three)"),
        ("{kind: hdd, slow: {after_s: 1, for_s: 2, factor: 0.5}}",
         "model: slow.factor must be a number from 1 to 1000, got 0.5"),
        ("{kind: ssd, slow: {after_s: -1, for_s: 2, factor: 2}}",
         "model: slow.after_s must be a number from 0 to 86400, got -1"),
        ("{kind: ssd, slow: {after_s: 1, for_s: .nan, factor: 2}}", "slow.for_s must be a number"),
    ],
)  # fmt: skip
def test_malformed_ssds_and_faults(model: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_spec(f"disks: [{{name: d0, size: 1GiB, model: {model}}}]", "x.yaml", "x")
    assert str(err.value).startswith("x.yaml: disks[0] (d0): ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert err.value.exit_code == 2


def test_faults_on_either_kind() -> None:
    text = (
        "disks: [{name: d0, size: 1GiB, model: {kind: %s, eio: [512MiB, 1MiB],"
        " slow: {after_s: 10, for_s: 5, factor: 4}}}]"
    )
    want = Faults(512 * MIB, MIB, 10.0, 5.0, 4.0)
    for kind in ("hdd", "ssd"):
        model = parse_spec(text % kind, "x.yaml", "x").disks[0].model
        assert model is not None and model.faults == want
    assert want.slow_at(10) and want.slow_at(14.9)
    assert not want.slow_at(9.9) and not want.slow_at(15)


def test_plugin_params_name_every_field_and_fault() -> None:
    faults = Faults(4096, 8192, 1.0, 2.0, 3.0)
    for model, kind in ((SsdModel(faults=faults), "ssd"), (HddModel(faults=faults), "hdd")):
        params = plugin_params(model, GIB, "/dev/shm/x/d0.data")
        assert params[:2] == ["file=/dev/shm/x/d0.data", f"size={GIB}"]
        assert "eio_start=4096" in params and "slow_factor=3.0" in params
        assert not any(p.startswith(("kind=", "faults=")) for p in params)
        # The plugin (with the headers it includes) reads exactly these keys.
        source = plugin_text(kind)
        for param in params:
            assert f'strcmp (key, "{param.split("=")[0]}")' in source, param
    assert not any("eio" in p or "slow" in p for p in plugin_params(SsdModel(), GIB, "/f"))


def test_a_lab_disk_with_either_model_survives_its_record() -> None:
    for model in (SsdModel(faults=Faults(0, 4096)), HddModel(rpm=5400), None):
        disk = LabDisk("d0", "/dev/loop9", None, 400, 400, 0, GIB, model)
        assert decode(LabDisk, encode(disk)) == disk


def test_formulas() -> None:
    model = SsdModel()
    assert service_s(model, 4096) == pytest.approx(2e-3 + 4096 / 400e6)
    assert iops(model, 4096, 1) == pytest.approx(1 / 2.01024e-3)
    assert iops(model, 4096, 4) == pytest.approx(4 * iops(model, 4096, 1))
    assert iops(model, 4096, 8) == iops(model, 4096, 4)  # no more channels
    assert iops(model, MIB, 8) * MIB == pytest.approx(400e6)  # the interface binds
    slow = service_s(model, 4096, write=True, past_op=True)
    assert slow == pytest.approx(12e-3 + 4096 / 400e6)
