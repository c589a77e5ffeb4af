"""`iotuner bottleneck` on the lab: it finds each bus and measures its cap (root, ~40 s).

One lab, two-buses: its bus0 is three-disks-one-bus, so one run checks a bus that plateaus at
its cap and one that does not, each found apart from the other.
"""

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
    origin = saved.pop("origin")  # when, by which command, on what (issue 30 point 7)
    assert origin["command"].startswith("iotuner bottleneck")
    assert saved == doc
    return doc


def test_each_bus_is_found_and_measured_apart_and_the_full_one_plateaus_at_its_cap(
    state: Path,
) -> None:
    """bus0 of two-buses is three-disks-one-bus (three 100 MB/s disks on a 250 MB/s bus):
    its plateau is checked here, beside bus1's two disks that stay below their cap."""
    with lab_session("two-buses") as lab:
        doc = _run(state, [d.device for d in lab.disks], "2")
        buses = {b.name: b.device.removeprefix("/dev/") for b in lab.buses}
        on = {b: [d.device.removeprefix("/dev/") for d in lab.disks if d.bus == b] for b in buses}
    found = {g["component"]["name"]: g for g in doc["groups"]}
    assert len(doc["groups"]) == 2 and set(found) == {buses["bus0"], buses["bus1"]}
    full, half = found[buses["bus0"]], found[buses["bus1"]]
    print(f"\n{full['summary']}\n{half['summary']} in {doc['seconds']} s")
    assert full["component"] == {"id": f"block:{buses['bus0']}", "kind": "bus",
                                 "name": buses["bus0"]}  # fmt: skip
    assert sorted(full["devices"]) == sorted(on["bus0"])
    assert sorted(half["devices"]) == sorted(on["bus1"])
    plateau = full["plateau"]
    assert plateau["capped"] and plateau["from_devices"] == 3
    # blk-throttle lets a short run through a few percent above its rate, the same share at
    # any rate; the disks' own solos, capped the same way, measure that share in this run (CI
    # measured 312 MB/s from three 100 MB/s disks and a 263 MB/s plateau under 250 MB/s).
    # Other work only slows a capped device: the solos' sum stays near or under 300 MB/s.
    overshoot = plateau["expected_mbps"] / 300
    cap = plateau["ceiling_mbps"] / (250 * overshoot)
    below = half["plateau"]["ceiling_mbps"] / (200 * overshoot)
    print(
        f"SPREAD bottleneck: overshoot {overshoot:.3f} cap {cap:.3f} below {below:.3f} "
        f"seconds {doc['seconds']}"
    )
    assert overshoot < 1.10
    # The plateau against the bus's cap and bus1's two disks against their own solos, each as
    # a ratio to this run's solos. Over 15 runs (2026-11-28 12:34-13:26, the VM shared by 7
    # engineers, load average 0.5-22), figures from the 8 whose lab came down (the other 7
    # failed in `lab down`, a bus's loop device still open after its 5 s wait, load 9-20: not
    # a figure), min / median / max: cap 0.987 / 0.993 / 1.004, below 0.983 / 1.001 / 1.016,
    # overshoot 1.020 / 1.034 / 1.041, seconds 22.8 / 23.8 / 26.8.
    assert cap == pytest.approx(1, rel=0.05)
    assert f"share bus {buses['bus0']}: plateau" in full["summary"]
    assert not half["plateau"]["capped"]
    assert below == pytest.approx(1, rel=0.10)
    assert doc["seconds"] < 60
