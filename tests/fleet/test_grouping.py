"""The fleet playbook's first play on fixture hosts: groups, canaries, and no plan no rollout.

Needs neither root nor devices: each inventory host probes its own fixture tree
(`iotuner_sys_root`), and `--check` keeps the canaries from tuning, so the rollout stops at
its first check for want of a plan.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tuner.fleet.fingerprint import fingerprint

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible")


def test_hosts_group_by_hardware_and_marked_canaries_lead(tmp_path: Path) -> None:
    scenarios = {"st01": "well-configured", "st02": "well-configured",
                 "st03": "hba-downtrained", "st04": "well-configured"}  # fmt: skip
    hosts = {}
    for name, scenario in scenarios.items():
        build_scenario(scenario, tmp_path / name)
        hosts[name] = {"iotuner_sys_root": str(tmp_path / name)}
    hosts["st02"]["iotuner_canary"] = "true"  # as an INI inventory would give it
    hosts["st04"]["iotuner_canary"] = "false"
    inventory = {"all": {"vars": {"ansible_connection": "local",
                                  "ansible_python_interpreter": sys.executable,
                                  "iotuner_fleet_dir": str(tmp_path / "plans")},
                         "hosts": hosts}}  # fmt: skip
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")}  # fmt: skip
    done = subprocess.run(
        ["ansible-playbook", "--check", "-i", str(tmp_path / "inventory.yml"),
         str(REPO / "playbooks" / "fleet.yml")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip

    good = fingerprint(probe_host(HostFS(tmp_path / "st01"))).digest
    slow = fingerprint(probe_host(HostFS(tmp_path / "st03"))).digest
    assert good != slow
    assert f'"msg": "{good}: canary st02, tune; 2 NUMA nodes x 8 CPUs;' in done.stdout
    assert f'"msg": "{slow}: canary st03, tune; 2 NUMA nodes x 8 CPUs;' in done.stdout
    assert "1000:0097 mpt3sas x4 5 GT/s (4 hdd" in done.stdout  # st03's downtrained HBA
    # No plan on the controller and no tune in check mode: the first batch fails, and with it
    # the run; nothing after it is tried.
    assert done.returncode == 2
    assert f"no plan for hardware group {good} at {tmp_path}/plans/{good}.yaml" in done.stdout
    assert "TASK [Map the group's plan" not in done.stdout
