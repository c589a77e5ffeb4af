"""`iotuner bottleneck` on the lab: it finds each bus and measures its cap (root, ~80 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli import iotuner
from tuner.lab import lab_session

pytestmark = pytest.mark.lab


def _run(state: Path, devices: list[str], runtime: str) -> dict[str, Any]:
    # Only this lab's disks: other labs may be up on a shared machine.
    done = iotuner(
        "bottleneck", "--json", "--runtime", runtime, "--devices", ",".join(devices), state=state
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    saved = json.loads((state / "results" / "bottleneck.json").read_text())
    assert saved.pop("measured_on")["hostname"], "saved with the host it was measured on"
    assert saved == doc
    return doc


def test_three_disks_plateau_at_the_bus_cap(state: Path) -> None:
    with lab_session("three-disks-one-bus") as lab:
        doc = _run(state, [d.device for d in lab.disks], "2")
        bus = lab.buses[0].device.removeprefix("/dev/")
    (group,) = doc["groups"]
    plateau = group["plateau"]
    print(f"\n{group['summary']} in {group['seconds']} s")
    assert group["component"] == {"id": f"block:{bus}", "kind": "bus", "name": bus}
    assert plateau["capped"] and plateau["from_devices"] == 3
    assert plateau["ceiling_mbps"] == pytest.approx(250, rel=0.05)
    assert plateau["expected_mbps"] == pytest.approx(300, rel=0.10)
    assert f"share bus {bus}: plateau" in group["summary"]
    assert doc["seconds"] < 60


def test_two_buses_are_found_separately(state: Path) -> None:
    with lab_session("two-buses") as lab:
        doc = _run(state, [d.device for d in lab.disks], "2")
        buses = {b.name: b.device.removeprefix("/dev/") for b in lab.buses}
        on = {b: [d.device.removeprefix("/dev/") for d in lab.disks if d.bus == b] for b in buses}
    found = {g["component"]["name"]: g for g in doc["groups"]}
    assert set(found) == {buses["bus0"], buses["bus1"]}
    full, half = found[buses["bus0"]], found[buses["bus1"]]
    print(f"\n{full['summary']}\n{half['summary']}")
    assert sorted(full["devices"]) == sorted(on["bus0"])
    assert sorted(half["devices"]) == sorted(on["bus1"])
    assert full["plateau"]["capped"]
    assert full["plateau"]["ceiling_mbps"] == pytest.approx(250, rel=0.05)
    assert not half["plateau"]["capped"]
    assert half["plateau"]["ceiling_mbps"] == pytest.approx(200, rel=0.10)
