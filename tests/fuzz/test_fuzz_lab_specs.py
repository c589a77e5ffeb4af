"""Fuzzing a lab spec's modelled disk (HDD, SSD or RAID set of HDDs, with faults): generated
`model:` mappings through parse_spec.

Every spec is read into a model whose parameters are within their bounds, or refused with one
line naming the file, the disk and the field.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tests.yaml_bombs import alias_bomb
from tuner.errors import BadInput
from tuner.lab import hdd, load_spec, parse_spec, raid, ssd
from tuner.lab.generate import draw_environment
from tuner.lab.hdd import HddModel
from tuner.lab.raid import RaidModel
from tuner.lab.spec import SPECS_DIR, START_BOUNDS, START_KEYS, START_SCHEDULERS

BOUNDS = {"hdd": hdd.BOUNDS, "ssd": ssd.BOUNDS, "raid0": raid.BOUNDS, "raid5": raid.BOUNDS}

_scalar = st.one_of(
    st.booleans(), st.none(), st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, 5, 32, 64, 3600, 7200, 15000, 262144, 2**31]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
)  # fmt: skip
_keys = st.sampled_from(
    ["kind", *hdd.BOUNDS, *ssd.BOUNDS, *raid.BOUNDS, "member", "eio", "slow", "speed", "", "rpm "]
)


def _near(integer: bool, low: float, high: float) -> st.SearchStrategy[object]:
    """Mostly in bounds, sometimes just outside or hostile."""
    inside = st.integers(int(low), int(high)) if integer else st.floats(low, high)
    return st.one_of(*[inside] * 12, st.sampled_from([low - 1, high + 1]), _scalar)


_sizes = st.one_of(st.integers(-1, 2**31), st.sampled_from(["1MiB", "512MiB", "1GiB", "x"]))
# Half well formed, half hostile (one_of picks its branches evenly).
_faults = {
    "eio": st.one_of(
        st.lists(st.integers(1, 64 << 20), min_size=2, max_size=2),
        st.one_of(st.lists(_sizes, min_size=2, max_size=2), _scalar),
    ),
    "slow": st.one_of(
        st.fixed_dictionaries(
            {"after_s": _near(False, 0, 86400), "for_s": _near(False, 0, 86400),
             "factor": _near(False, 1, 1000)}
        ),
        st.one_of(
            st.dictionaries(st.sampled_from(["after_s", "for_s", "factor", "x"]), _scalar),
            _scalar,
        ),
    ),
}  # fmt: skip


def _mostly_valid(kind: str) -> st.SearchStrategy[dict[str, object]]:
    optional = {**{key: _near(*b) for key, b in BOUNDS[kind].items()}, **_faults}
    if kind in raid.KINDS:  # a member is an hdd model without faults, or something hostile
        member = st.fixed_dictionaries(
            {}, optional={key: _near(*b) for key, b in hdd.BOUNDS.items()}
        )
        optional["member"] = st.one_of(member, member, st.dictionaries(_keys, _scalar), _scalar)
    return st.fixed_dictionaries({"kind": st.just(kind)}, optional=optional)


_models = st.one_of(
    _mostly_valid("hdd"),
    _mostly_valid("ssd"),
    _mostly_valid("raid0"),
    _mostly_valid("raid5"),
    st.dictionaries(_keys, _scalar, max_size=8),
    st.builds(lambda extra: {"kind": "hdd", **extra}, st.dictionaries(_keys, _scalar, max_size=6)),
    _scalar,
)


@FUZZ
@given(model=_models, size=st.sampled_from(["1GiB", "1GiB", "256MiB", "128MiB", 2**40, "x"]))
def test_a_generated_model_is_read_in_bounds_or_refused_in_one_line(
    model: object, size: object
) -> None:
    text = yaml.safe_dump({"disks": [{"name": "d0", "size": size, "model": model}]})
    try:
        with within():
            spec = parse_spec(text, "x.yaml", default_name="x")
    except BadInput as err:
        message = refused_well(err)
        assert message.startswith("x.yaml: disks[0]"), message
        note("refused")
        return
    note("accepted")
    disk = spec.disks[0]
    assert disk.model is not None and disk.iops == 0
    for key, (integer, low, high) in BOUNDS[disk.model.kind].items():
        value = getattr(disk.model, key)
        assert not isinstance(value, bool) and low <= value <= high, (key, value)
        assert isinstance(value, int) if integer else math.isfinite(value)
    faults = disk.model.faults
    assert 0 <= faults.eio_start <= faults.eio_start + faults.eio_length <= disk.size_bytes
    assert 1 <= faults.slow_factor <= 1000 and math.isfinite(faults.slow_for_s)
    drive = disk.model.member if isinstance(disk.model, RaidModel) else disk.model
    if isinstance(disk.model, RaidModel):
        assert disk.model.members >= raid.MIN_MEMBERS[disk.model.kind]
        for key, (_, low, high) in hdd.BOUNDS.items():
            assert low <= getattr(drive, key) <= high, (key, drive)
    if isinstance(drive, HddModel):
        assert drive.inner_mbps <= drive.outer_mbps
        assert drive.seek_track_ms <= drive.seek_full_ms


# -- whole specs as text (issue 27): hostile names, rates, shapes, nesting, aliases ------------

_SPECS = sorted(SPECS_DIR.glob("*.yaml"))
_HOSTILE_VALUES = [
    ".nan", ".inf", "-.inf", "1" + "0" * 400, "'lab\\n'", '"reno\\n"', "[1]", "{a: 1}", "~",
    "2026-02-31", "!!binary aGk=", "'[red]x[/]'", "*undefined", "0x7fffffffffffffff",
    "[[[[[[[[[[]]]]]]]]]]", "'" + "x" * 300 + "'",
]  # fmt: skip
_KEYS = ["name", "read_mbps", "write_mbps", "iops", "size", "bus", "fs", "rate_mbit", "rtt_ms",
         "tcp_congestion_control", "tcp_rmem", "stripe", "loss_percent", "mtu", "disk"]  # fmt: skip


@st.composite
def _spec_text(draw: st.DrawFn) -> str:
    """A built-in spec with one value made hostile, or a nesting / alias bomb appended."""
    text = draw(st.sampled_from(_SPECS)).read_text()
    how = draw(st.sampled_from(["value", "value", "value", "nesting", "aliases", "bytes"]))
    note(f"spec: {how}")
    if how == "value":
        key = draw(st.sampled_from(_KEYS))
        value = draw(st.one_of(st.sampled_from(_HOSTILE_VALUES), st.text(max_size=20)))
        pattern = re.compile(rf"(\b{key}: )([^,}}\n]*)")
        if pattern.search(text):
            return pattern.sub(lambda m: m[1] + value, text, count=1)
        return text + f"\n{key}: {value}\n"
    if how == "nesting":
        depth = draw(st.integers(10, 20_000))
        return text + "\nnetwork: " + "[" * depth + "]" * depth + "\n"
    if how == "aliases":
        return text + "\nnetwork:\n" + alias_bomb(draw(st.integers(2, 60)), 7, indent="  ")
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.sampled_from(["\x00", "\t", "\ufeff", "{{", "]", ": "])) + text[at:]


def spec_handled(text: str | Path) -> None:
    """Read (text, or a file through load_spec) into a spec whose names and rates are sound,
    or refused in one line naming the file."""
    source = str(text) if isinstance(text, Path) else "x.yaml"
    try:
        with within():
            if isinstance(text, Path):
                spec = load_spec(source)
            else:
                spec = parse_spec(text, source, default_name="x")
    except BadInput as err:
        assert refused_well(err).startswith(source), str(err)
        note("refused")
        return
    note("accepted")
    for named in (spec, *spec.buses, *spec.disks):
        assert re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", named.name), named.name
    for item in (*spec.buses, *spec.disks):
        assert math.isfinite(item.read_mbps) and math.isfinite(item.write_mbps), item
    if spec.network is not None:
        for end in (spec.network.sender, spec.network.receiver):
            cc = end.tcp_congestion_control
            assert cc is None or re.fullmatch(r"[a-z][a-z0-9_]{0,15}", cc), cc


@FUZZ
@given(_spec_text())
def test_a_generated_spec_is_read_soundly_or_refused_in_one_line(text: str) -> None:
    spec_handled(text)


@pytest.mark.parametrize("path", corpus("lab_specs"), ids=lambda p: p.name)
def test_specs_that_once_failed(path: Path) -> None:
    spec_handled(path)


# -- a disk's starting queue settings (issue 29's drawn labs) ------------------------------------

_start_values = st.one_of(
    st.sampled_from(list(START_SCHEDULERS)), _scalar, st.integers(-5, 70000),
    st.sampled_from(["mq-deadline\n", "none ", "cfq", 4096.0, 2**63]),
)  # fmt: skip


@FUZZ
@given(
    start=st.one_of(
        st.dictionaries(st.sampled_from([*START_KEYS, "rotational", "x"]), _start_values),
        _scalar,
    ),
    drawn=st.integers(0, 2**32),
)
def test_a_generated_start_is_read_in_bounds_or_refused_in_one_line(
    start: object, drawn: int
) -> None:
    """A disk's `start:` map on a throttled disk and on a drawn environment's disk."""
    plain = {"name": "d0", "size": "1GiB", "read_mbps": 9, "write_mbps": 9, "iops": 9}
    flow = yaml.safe_dump(start, default_flow_style=True, width=10**6).strip()
    for text in (
        yaml.safe_dump({"disks": [{**plain, "start": start}]}),
        re.sub(r"start: \{[^}]*\}", lambda _: f"start: {flow}", draw_environment(drawn).spec_text),
    ):
        try:
            with within():
                spec = parse_spec(text, "x.yaml", default_name="x")
        except BadInput as err:
            assert refused_well(err).startswith("x.yaml: "), str(err)
            note("refused")
            continue
        note("accepted")
        for disk in spec.disks:
            for key, value in disk.start:
                if key == "scheduler":
                    assert value in START_SCHEDULERS
                else:
                    low, high = START_BOUNDS[key]
                    assert re.fullmatch(r"[0-9]+", value) and low <= int(value) <= high
