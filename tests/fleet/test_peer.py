"""A transfer tune's peer served by the fleet: roles/iotuner_peer starts `iperf3 -s` for the
length of the tune, bounded in time, and stops it after; fleet.yml runs the canary's
`tune --workload disk-to-network --peer` against it.

Real ansible-playbook over a local connection, as tests/fleet/test_fleet.py. The fleet run
uses tests/short_path.py's path (200 Mbit/s, 20 ms, Linux 2.6's buffers: the window cap of
the built-in wan-old-buffers, with trials a fifth as long) as two hosts: the canary's iotuner
runs in the sender's namespace (its command is `ip netns exec SENDER python -m tuner.cli`),
the peer's server in the receiver's (`iotuner_peer_exec`), so no value of this machine's own
namespace moves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.lab.test_network import in_ns
from tests.netns import host_sysctl, sysctl_in
from tests.short_path import short_path_spec
from tuner.lab import lab_down, lab_up, load_spec
from tuner.lab.model import LabNetwork
from tuner.plan import read_plan

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
ROLES = REPO / "playbooks" / "roles"
FLEET = REPO / "playbooks" / "fleet.yml"
PORT = 5299
KEYS = ("net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_congestion_control")


@pytest.fixture
def ansible() -> None:
    if os.geteuid() != 0 or shutil.which("ansible-playbook") is None:
        pytest.skip("needs root and ansible-playbook")
    if shutil.which("iperf3") is None:
        pytest.skip("needs iperf3")


def playbook(tmp_path: Path, path: Path, inventory: dict[str, Any], *args: str) -> str:
    """ansible-playbook `path` over `inventory` (local connection); its output."""
    where = tmp_path / "inventory.yml"
    where.write_text(yaml.safe_dump(inventory, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_ROLES_PATH": str(ROLES),
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
           "ANSIBLE_REMOTE_TMP": str(tmp_path / "ansible-remote")}  # fmt: skip
    env.pop("IOTUNER_STATE_DIR", None)
    done = subprocess.run(["ansible-playbook", "-i", str(where), str(path), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    return done.stdout


def listening(port: int) -> bool:
    found = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True,
                           check=True).stdout  # fmt: skip
    return bool(found.strip())


ROLE_PLAY = """
- hosts: peer
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {name: iotuner_peer}
    - ansible.builtin.command: {argv: [ss, -Hltn, "sport = :{{ iotuner_peer_port }}"]}
      register: seen
      changed_when: false
    - ansible.builtin.copy: {content: "{{ seen.stdout }}", dest: "{{ seen_file }}", mode: "0600"}
    - ansible.builtin.include_role: {name: iotuner_peer, tasks_from: stop}
      when: stop | bool
"""


def role_inventory(tmp_path: Path, stop: bool, seconds: int) -> dict[str, Any]:
    return {"all": {"hosts": {"peer": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "iotuner_peer_port": PORT, "iotuner_peer_bind": "127.0.0.1",
        "iotuner_peer_seconds": seconds, "iotuner_peer_pidfile": str(tmp_path / "iperf3.pid"),
        "seen_file": str(tmp_path / "seen"), "stop": stop,
    }}}}  # fmt: skip


@pytest.mark.lab_parallel
@pytest.mark.xdist_group(f"port-{PORT}")  # both serve on it: one worker, in turn
def test_the_role_serves_until_stopped(ansible: None, tmp_path: Path) -> None:
    play = tmp_path / "peer.yml"
    play.write_text(ROLE_PLAY)
    playbook(tmp_path, play, role_inventory(tmp_path, stop=True, seconds=600))
    assert f"127.0.0.1:{PORT}" in (tmp_path / "seen").read_text()  # it listened meanwhile
    assert not listening(PORT)  # ...and is gone once stopped
    assert not (tmp_path / "iperf3.pid").exists()


@pytest.mark.lab_parallel
@pytest.mark.xdist_group(f"port-{PORT}")  # both serve on it: one worker, in turn
def test_a_server_never_stopped_ends_by_itself(ansible: None, tmp_path: Path) -> None:
    """The play that started it dies, say: the server still ends after its seconds."""
    play = tmp_path / "peer.yml"
    play.write_text(ROLE_PLAY)
    started = time.monotonic()
    playbook(tmp_path, play, role_inventory(tmp_path, stop=False, seconds=10))
    assert f"127.0.0.1:{PORT}" in (tmp_path / "seen").read_text()
    while listening(PORT):
        assert time.monotonic() - started < 30, "iperf3 -s outlived its 10 s"
        time.sleep(0.5)


# Its own lab (random id: its namespaces, veths and delay line), state directories and plan
# directory; the peer's server listens inside the receiver's namespace, not on this host's
# port; every value it writes is in the sender's namespace, and the host's are checked
# unchanged. The plan it holds rests on the window cap's physics (the canary's 128 KiB send
# buffer holds the 20 ms path near a quarter of its 200 Mbit/s), not on a tolerance.
@pytest.mark.lab_parallel
@pytest.mark.end_to_end
def test_the_fleet_tunes_its_canary_against_the_peer_it_serves(
    ansible: None, tmp_path: Path, state: Path
) -> None:
    """fleet.yml end to end against a served peer: 48-72 s on the parallel phase's workers at
    load average 8-18 (2026-11-28), most of it ansible-playbook's own start and tasks around
    a tune that stops after its first point (--time 1)."""
    lab = lab_up(load_spec(str(short_path_spec(tmp_path))))
    try:
        fleet_tune(tmp_path, lab.network)
    finally:
        lab_down()


def fleet_tune(tmp_path: Path, net: LabNetwork | None) -> None:
    assert net is not None
    # The peer's receive buffer as a modern host's: the canary's send buffer is the cap.
    in_ns(net.receiver, "sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 131072 33554432")
    host_before = {key: host_sysctl(key) for key in KEYS}
    sender_before = {key: sysctl_in(net.sender, key) for key in KEYS}
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "iotuner_fleet_dir": str(tmp_path / "fleet-plans"),
                 "iotuner_fleet_hosts": "dtn1"},
        "hosts": {
            "dtn1": {"iotuner_command": ["ip", "netns", "exec", net.sender, sys.executable,
                                         "-m", "tuner.cli"],
                     "iotuner_state_dir": str(tmp_path / "dtn1"),
                     "iotuner_tune_peer": "dtn2",
                     # The smallest real tune: the search stops after its first point.
                     "iotuner_tune_args": ["--budget", "3", "--runtime", "1", "--ramp", "1",
                                           "--time", "1"]},
            "dtn2": {"ansible_host": net.receiver_address,
                     "iotuner_peer_exec": ["ip", "netns", "exec", net.receiver],
                     "iotuner_peer_bind": net.receiver_address,
                     "iotuner_peer_pidfile": str(tmp_path / "iperf3.pid")},
        },
    }}  # fmt: skip
    out = playbook(tmp_path, FLEET, inventory, "--skip-tags", "rollout")
    print(out[-3000:])
    (plan_path,) = (tmp_path / "fleet-plans").glob("*.yaml")
    plan = read_plan(plan_path)
    assert plan.workload == "disk-to-network"
    entries = {(e.key, e.target): e.value for e in plan.entries}
    # The canary's send buffer was the cap: the plan raises it, for the canary's own kind.
    assert entries[("net.ipv4.tcp_wmem", "host")][2] > 131072
    assert plan.measured is not None and plan.measured["peer"]["peer"] == (
        f"{net.receiver_address}:5201"
    )
    # Not rolled out (--skip-tags rollout), the server stopped, every value as it was.
    assert "TASK [Check that the group has a plan]" not in out  # the rollout's first task
    assert subprocess.run(["ip", "netns", "pids", net.receiver], capture_output=True,
                          text=True, check=True).stdout == ""  # fmt: skip
    assert not (tmp_path / "iperf3.pid").exists()
    assert {key: sysctl_in(net.sender, key) for key in KEYS} == sender_before
    assert {key: host_sysctl(key) for key in KEYS} == host_before
