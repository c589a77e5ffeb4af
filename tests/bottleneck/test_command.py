"""`iotuner bottleneck` without a lab: bad names, and a device with nothing to share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.cli import iotuner
from tuner.bottleneck import default_devices


def test_a_name_that_is_not_a_block_device_is_bad_input(state: Path) -> None:
    done = iotuner("bottleneck", "--devices", "/dev/null", state=state, timeout=60)
    assert done.returncode == 2
    assert "--devices /dev/null: not a block device" in done.stderr


def test_one_device_makes_no_group_and_reads_nothing(state: Path) -> None:
    devices = default_devices(probe_host(HostFS("/")))
    if not devices:
        pytest.skip("no block device on this host")
    done = iotuner("bottleneck", "--json", "--devices", devices[0], state=state, timeout=60)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["devices"] == [devices[0]] and doc["groups"] == []
    saved = json.loads((state / "results" / "bottleneck.json").read_text())
    assert saved.pop("measured_on")["hostname"], "saved with the host it was measured on"
    origin = saved.pop("origin")  # when, by which command, on what (issue 30 point 7)
    assert origin["command"].startswith("iotuner bottleneck") and origin["lab"] is False
    assert saved == doc
    human = iotuner("bottleneck", "--devices", devices[0], state=state, timeout=60)
    assert "share a component above them: nothing to scale" in human.stdout
