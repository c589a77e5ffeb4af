"""The route to a peer: `ip -j route get` read by a small parser, the interface's MTU and
speed read from a fixture tree, and once for real (the loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probes.hostfs import HostFS
from tuner.trials.route import Route, parse_route, route_to

WAN = json.dumps([{"dst": "10.77.0.2", "dev": "wan0", "prefsrc": "10.77.0.1", "flags": [],
                   "uid": 0, "cache": []}])  # fmt: skip


def tree(tmp_path: Path, dev: str, **files: str) -> HostFS:
    where = tmp_path / "sys/class/net" / dev
    where.mkdir(parents=True)
    for name, text in files.items():
        (where / name).write_text(text + "\n")
    return HostFS(tmp_path)


def test_the_interface_its_mtu_and_speed(tmp_path: Path) -> None:
    fs = tree(tmp_path, "wan0", mtu="1500", speed="10000")
    assert parse_route(WAN, fs) == Route("wan0", 1500, 10000)


@pytest.mark.parametrize("speed", [None, "-1", "0", "fast"])
def test_a_speed_the_driver_does_not_know_is_none(tmp_path: Path, speed: str | None) -> None:
    files = {"mtu": "9000"} | ({"speed": speed} if speed is not None else {})
    assert parse_route(WAN, tree(tmp_path, "wan0", **files)) == Route("wan0", 9000, None)


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[]", "{}", '[{"dst": "10.77.0.2"}]', '[{"dev": "../../etc"}]',
     '[{"dev": "-h"}]', '[{"dev": 7}]', '[{"dev": "gone0"}]'],
)  # fmt: skip
def test_an_answer_without_a_readable_interface_is_none(tmp_path: Path, text: str) -> None:
    assert parse_route(text, tree(tmp_path, "wan0", mtu="1500")) is None


def test_the_loopback_for_real_and_no_lookup_for_a_name() -> None:
    found = route_to("127.0.0.1")
    assert found is not None and found.interface == "lo" and found.mtu >= 1500
    assert route_to("dtn1.example.org") is None  # only addresses: no name is resolved here
    assert route_to("-h") is None
