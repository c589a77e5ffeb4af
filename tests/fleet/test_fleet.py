"""The fleet playbook for real: several hosts on this machine, each bound to its own lab devices.

Every host of the inventory is this machine over a local connection, with its own devices
(`iotuner_devices`), its own configuration root (where the role writes udev rules) and its own
state directory (its journal of applies). The fingerprint is limited to each host's devices, so
hosts whose devices have the same size form one hardware group. One test tunes for real on the
canary of a two-host lab (a canary and one follower: every further host would only repeat the
follower's rollout); the other gives each group a plan, lets a rival tuning daemon fight
one host's readahead and checks that the rollout stops at that host.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.cli import iotuner
from tests.loopdev import loop_device, need_root
from tuner.fleet.fingerprint import fingerprint
from tuner.lab.build import lab_up
from tuner.lab.spec import parse_spec
from tuner.lab.teardown import lab_down
from tuner.plan import read_plan

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "playbooks" / "fleet.yml"
MANAGED = ("etc/udev/rules.d/60-iotuner.rules", "etc/sysctl.d/60-iotuner.conf",
           "etc/systemd/system/iotuner-boot.service")  # fmt: skip
_RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass(frozen=True)
class FakeHost:
    """One inventory host: its name, its devices, and where its files and journal go."""

    name: str
    devices: tuple[str, ...]
    conf_root: Path
    state_dir: Path

    def vars(self) -> dict[str, Any]:
        """Its host variables in the inventory."""
        return {
            "iotuner_devices": list(self.devices),
            "iotuner_tune_target": f"/dev/{self.devices[0]}",
            "iotuner_conf_root": str(self.conf_root),
            "iotuner_state_dir": str(self.state_dir),
        }

    def managed_files(self) -> list[str]:
        """The managed files present under its configuration root."""
        return [rel for rel in MANAGED if (self.conf_root / rel).exists()]

    def history(self) -> list[dict[str, Any]]:
        """`iotuner history --json` in its state directory, newest first."""
        done = iotuner("history", "--json", state=self.state_dir)
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout)["applies"])

    def verify(self) -> subprocess.CompletedProcess[str]:
        """`iotuner verify` of the plan the rollout wrote for it."""
        plan = str(self.state_dir / "fleet-plan.yaml")
        return iotuner("verify", plan, "--conf-root", str(self.conf_root), state=self.state_dir)


def read_ahead(device: str) -> int:
    """The device's readahead as the kernel shows it now."""
    return int(Path(f"/sys/block/{device}/queue/read_ahead_kb").read_text())


def scheduler(device: str) -> str:
    """The device's active scheduler."""
    text = Path(f"/sys/block/{device}/queue/scheduler").read_text()
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else text.strip()


def fingerprint_of(device: str) -> str:
    """The group a host bound to `device` falls in, as the facts module computes it."""
    return fingerprint(probe_host(HostFS(Path("/"))), [device]).digest


@pytest.fixture
def ansible() -> None:
    """Skip unless root with ansible-playbook on PATH."""
    need_root()
    if shutil.which("ansible-playbook") is None:
        pytest.skip("needs ansible-playbook")


def fake_host(tmp_path: Path, name: str, *devices: str) -> FakeHost:
    """A host bound to `devices`, with an empty configuration root and no journal yet."""
    host = FakeHost(name, devices, tmp_path / name / "conf", tmp_path / name / "state")
    host.conf_root.mkdir(parents=True)
    return host


def roll_back(hosts: list[FakeHost]) -> None:
    """Undo every apply on every host (`rollback --to 0`), while their devices still exist."""
    for host in hosts:
        if (host.state_dir / "state.db").exists():
            done = iotuner("rollback", "--to", "0", state=host.state_dir)
            assert done.returncode == 0, f"{host.name}: {done.stdout}{done.stderr}"


def run_fleet(
    tmp_path: Path, hosts: list[FakeHost], *args: str, **extra: Any
) -> subprocess.CompletedProcess[str]:
    """ansible-playbook fleet.yml over an inventory of `hosts` (local connection)."""
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "iotuner_command": [sys.executable, "-m", "tuner.cli"],
                "iotuner_fleet_dir": str(tmp_path / "fleet-plans"),
                **extra,
            },
            "hosts": {host.name: host.vars() for host in hosts},
        }
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),  # the managed "hosts" import tuner from this checkout
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "ANSIBLE_REMOTE_TMP": str(tmp_path / "ansible-remote"),
    }
    env.pop("IOTUNER_STATE_DIR", None)  # each host has its own
    return subprocess.run(
        ["ansible-playbook", "-i", str(path), str(PLAYBOOK), *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1200,
    )  # fmt: skip


def recap(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    """PLAY RECAP per host: ok, changed, unreachable, failed."""
    tail = done.stdout.rsplit("PLAY RECAP", 1)[-1]
    return {
        m[1]: dict(
            zip(("ok", "changed", "unreachable", "failed"), map(int, m.groups()[1:]), strict=True)
        )
        for m in _RECAP.finditer(tail)
    }


def output(done: subprocess.CompletedProcess[str]) -> str:
    """Everything ansible-playbook printed, for assertion messages."""
    return done.stdout[-6000:] + done.stderr[-2000:]


# --- the real canary tune ---------------------------------------------------------------------

LAB_SPEC = """
description: Two 100 MB/s, 200 IOPS disks for two fleet hosts (one each), on no bus.
disks:
  - {name: d0, read_mbps: 100, write_mbps: 100, iops: 200, size: 512MiB}
  - {name: d1, read_mbps: 100, write_mbps: 100, iops: 200, size: 512MiB}
"""


@contextmanager
def fleet_lab(state: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The lab above, recorded in its own state directory; its disks' kernel names."""
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(state))
    lab = lab_up(parse_spec(LAB_SPEC, "fleet-lab", "fleet-lab"))
    try:
        yield [disk.device.removeprefix("/dev/") for disk in lab.disks]
    finally:
        monkeypatch.setenv("IOTUNER_STATE_DIR", str(state))
        lab_down()


# Its own lab devices (the kernel's next free loop numbers), configuration roots, state
# directories and journals, as the rollout test below; the canary's idle gate watches its own
# devices. The plan it holds rests on physics (16 KiB buffered reads at the default readahead
# on a 200-IOPS disk), not on a tolerance.
@pytest.mark.lab_parallel
@pytest.mark.end_to_end
def test_canary_tunes_once_and_the_group_gets_its_plan(
    ansible: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two fleet runs end to end (the tune and rollout, then the fetched plan changing
    nothing): 56-63 s on the parallel phase's workers at load average 8-18 (2026-11-28), most
    of it ansible-playbook's tasks on two hosts, twice, around a tune that stops after its
    first point (--time 1)."""
    with ExitStack() as stack:
        disks = stack.enter_context(fleet_lab(tmp_path / "lab-state", monkeypatch))
        hosts = [fake_host(tmp_path, f"node{i}", disk) for i, disk in enumerate(disks, 1)]
        stack.callback(roll_back, hosts)
        group = fingerprint_of(disks[0])
        assert {fingerprint_of(d) for d in disks} == {group}
        # The smallest real tune: --time 1 ends the search after its first point (the rules').
        tune_args = ["--budget", "3", "--runtime", "1", "--ramp", "0", "--time", "1"]
        done = run_fleet(tmp_path, hosts, iotuner_tune_args=tune_args)
        assert done.returncode == 0, output(done)

        # One tune, on the first host of the group; its plan fetched to the controller.
        assert f"{group}: canary node1, tune;" in done.stdout
        assert re.search(r"TASK \[Tune the canary[^\n]*\n(ok|changed): \[node1\]\n\n", done.stdout)
        # A canary is a live host: its trials wait for idle devices unless told otherwise.
        ran = re.search(r'"[^"\n]* tune --workload \S+ [^"\n]*--idle-below 10 ', done.stdout)
        assert ran is not None, output(done)
        plan = read_plan(tmp_path / "fleet-plans" / f"{group}.yaml")
        assert plan.source == "tune" and plan.measured is not None and plan.measured["chosen"]
        # 16 KiB buffered reads on a 200-IOPS disk: the default readahead is far from best.
        assert {e.target for e in plan.entries} == {disks[0]}
        wanted = {e.key: e.value for e in plan.entries}

        for host, disk in zip(hosts, disks, strict=True):
            mine = read_plan(host.state_dir / "fleet-plan.yaml")
            assert mine.host == host.name
            assert [(e.key, e.target, e.value) for e in mine.entries] == [
                (e.key, disk, e.value) for e in plan.entries
            ], host.name
            if "block.scheduler" in wanted:
                assert scheduler(disk) == wanted["block.scheduler"], host.name
            backing = Path(f"/sys/block/{disk}/loop/backing_file").read_text().strip()
            rules = (host.conf_root / MANAGED[0]).read_text()
            assert f'ATTR{{loop/backing_file}}=="{backing}"' in rules, rules
            verified = host.verify()
            assert verified.returncode == 0, verified.stdout
            assert [a["status"] for a in host.history()] == ["applied"]

        # Again with the fetched plan: no tune, nothing to change anywhere.
        plans = {group: str(tmp_path / "fleet-plans" / f"{group}.yaml")}
        again = run_fleet(tmp_path, hosts, iotuner_fleet_plans=plans)
        assert again.returncode == 0, output(again)
        assert f"{group}: canary node1, plan {plans[group]};" in again.stdout
        assert {h: r["changed"] for h, r in recap(again).items()} == {h.name: 0 for h in hosts}


# --- a rollout that meets a failing host -------------------------------------------------------


class RivalDaemon:
    """A rival tuning daemon: puts its own readahead back whenever someone changes it.

    What tuned's or a vendor agent's drift correction does to a host iotuner applies to; its
    reverts are what `iotuner verify` catches after the apply.
    """

    def __init__(self, device: str, value: int, period_s: float = 0.02) -> None:
        self.path = Path(f"/sys/block/{device}/queue/read_ahead_kb")
        self.value = value
        self.period_s = period_s
        self.reverts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rival-{device}", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            if int(self.path.read_text()) != self.value:
                self.path.write_text(f"{self.value}\n")
                self.reverts += 1

    def __enter__(self) -> RivalDaemon:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def group_plan(path: Path, device: str, read_ahead_kb: int, extra: list[dict[str, Any]]) -> Path:
    """A hand-written plan for a group, naming its canary's device."""
    entries = [{"key": "block.read_ahead_kb", "target": device, "value": read_ahead_kb}, *extra]
    doc = {"plan_version": 1, "created": "2026-11-22T09:00:00+00:00", "host": "canary",
           "source": "advise", "workload": "stream-read", "entries": entries}  # fmt: skip
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.lab_parallel  # its own loop devices, roots and journals; hand-written plans
def test_rollout_stops_at_the_host_that_fails_verification(ansible: None, tmp_path: Path) -> None:
    with ExitStack() as stack:
        # Group A: 64 MiB devices (node1, node3); group B: 96 MiB devices (node2, node4).
        sizes = {"node1": 64, "node2": 96, "node3": 64, "node4": 96}
        loops = {name: stack.enter_context(loop_device(mb)) for name, mb in sizes.items()}
        hosts = [fake_host(tmp_path, name, loops[name]) for name in sizes]
        stack.callback(roll_back, hosts)
        group_a, group_b = fingerprint_of(loops["node1"]), fingerprint_of(loops["node2"])
        assert group_a != group_b and fingerprint_of(loops["node3"]) == group_a
        before = {name: (read_ahead(dev), scheduler(dev)) for name, dev in loops.items()}
        plans = {
            group_a: str(group_plan(tmp_path / "a.yaml", loops["node1"], 4096, [
                {"key": "block.scheduler", "target": loops["node1"], "value": "mq-deadline"}])),
            group_b: str(group_plan(tmp_path / "b.yaml", loops["node2"], 2048, [])),
        }  # fmt: skip

        # Check mode first: it shows the changes and makes none.
        check = run_fleet(tmp_path, hosts, "--check", "--diff", iotuner_fleet_plans=plans)
        assert check.returncode == 0, output(check)
        assert all(h.managed_files() == [] for h in hosts)
        assert {n: (read_ahead(d), scheduler(d)) for n, d in loops.items()} == before

        # node3 has a rival daemon holding its readahead where it found it. The role reads
        # its batch back before it says applied, so the apply itself fails there (if the rival
        # is slower than that, verification does): either way node3 is rolled back.
        with RivalDaemon(loops["node3"], before["node3"][0]) as rival:
            done = run_fleet(tmp_path, hosts, iotuner_fleet_plans=plans, iotuner_serial=[1])
        assert done.returncode != 0, output(done)
        assert rival.reverts >= 1
        read_back = (
            f"Read the whole batch back: block.read_ahead_kb on {loops['node3']}: reads "
            f"{before['node3'][0]} once the batch is written, not 4096"
        )
        verification = (
            f"verification failed on node3: block.read_ahead_kb on {loops['node3']}: "
            f"/sys/block/{loops['node3']}/queue/read_ahead_kb reads {before['node3'][0]}, "
            "expected 4096 (rolled back)"
        )
        assert read_back in done.stdout or verification in done.stdout, output(done)
        counts = recap(done)
        assert counts["node3"]["failed"] == 1
        assert all(counts[n]["failed"] == 0 for n in ("node1", "node2", "node4"))

        node1, node2, node3, node4 = hosts
        # Earlier batches: applied, each from its own group's plan, and still verified.
        for host, ra, sched in ((node1, 4096, "mq-deadline"), (node2, 2048, before["node2"][1])):
            device = loops[host.name]
            assert (read_ahead(device), scheduler(device)) == (ra, sched), host.name
            assert host.managed_files() == [MANAGED[0]], host.name
            verified = host.verify()
            assert verified.returncode == 0, verified.stdout
            assert [a["status"] for a in host.history()] == ["applied"]
        # The failing host: its apply undone, its files as before (none).
        assert node3.managed_files() == []
        assert scheduler(loops["node3"]) == before["node3"][1]
        (undone,) = node3.history()
        assert undone["rolled_back_at"] is not None
        # The batch after it never ran: nothing written, no journal, values as found.
        assert node4.managed_files() == []
        assert not (node4.state_dir / "state.db").exists()
        assert (read_ahead(loops["node4"]), scheduler(loops["node4"])) == before["node4"]
