"""Link bandwidth as a user reads it: PCIe after encoding, SAS/SATA lanes, wide ports."""

from __future__ import annotations

import pytest

from tests.facts.model import link
from tuner.facts.links import lane_mbps, pcie_max_mbps, pcie_mbps, port_capacity_mbps
from tuner.topology.model import StoragePort


def test_pcie_x4_gen2_carries_2000_mbps() -> None:
    assert pcie_mbps(link(5.0, 4)) == 2000.0
    assert pcie_max_mbps(link(5.0, 4, 8.0, 8)) == 7876.9
    assert pcie_mbps(None) is None


@pytest.mark.parametrize(
    ("gbps", "mbps"),
    [(1.5, 150.0), (3.0, 300.0), (6.0, 600.0), (12.0, 1200.0), (22.5, 2400.0), (None, None)],
)
def test_serial_lane_rates_after_encoding(gbps: float | None, mbps: float | None) -> None:
    assert lane_mbps(gbps) == mbps


def test_wide_port_capacity_is_lanes_times_lane_rate() -> None:
    assert port_capacity_mbps(StoragePort("p", None, "port-4:0", "sas_port", 6.0, 4)) == 2400.0
    assert port_capacity_mbps(StoragePort("p", None, "port-4:0", "sas_port", 12.0, 8)) == 9600.0
    assert port_capacity_mbps(StoragePort("p", None, "ata1", "ata_port", 6.0, None)) == 600.0
    assert port_capacity_mbps(StoragePort("p", None, "port-4:0", "sas_port", None, 4)) is None
