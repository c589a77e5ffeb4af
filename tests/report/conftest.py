"""Report fixtures: a fixture host with findings on its storage and network paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.scenarios import build_scenario

SCENARIO = "nic-hba-one-switch"  # a NIC and an HBA behind one switch: findings on both paths
WORKLOAD = "disk-to-network"


@pytest.fixture(scope="session")
def host_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fixture host tree with SAS disks, an NVMe, a NIC, and a finding on a PCI bridge."""
    root = tmp_path_factory.mktemp("report-host") / SCENARIO
    build_scenario(SCENARIO, root)
    return root
