"""roles/iotuner_install puts iotuner's host part on a managed host, and the iotuner modules run
with nothing else: real ansible-playbook over a local connection (as tests/fleet/test_fleet.py
reaches its hosts), a real wheel built by the controller, a real venv on the "host" that has
neither the extras (scipy, scikit-optimize, matplotlib, ansible-core) nor this checkout on its
path.

Over 30 s (about 1.5 min on the shared 2-core VM): three playbook runs, each building the
wheel on the "controller", and the first installing the host part's dependencies (typer, rich,
psutil, pyudev, PyYAML, pytest-testinfra, prometheus-client) from the configured index. Marked
lab (root, ansible-playbook) and lab_parallel: it holds no figure and changes nothing outside
its temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner.plan import Plan, PlanEntry, plan_text

pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]

REPO = Path(__file__).resolve().parents[2]
ROLES = REPO / "playbooks" / "roles"

PLAY = """
- hosts: node1
  gather_facts: false
  roles:
    - role: iotuner_install
  tasks:
    - name: The facts module, probing read-only under the venv's python
      iotuner_facts: {root: /}
    - name: The apply role's plan module, rendering a plan (in check mode, nothing written)
      iotuner_plan: {plan: "{{ plan }}", conf_root: "{{ conf_root }}", root: /}
      check_mode: true
      register: rendered
    - ansible.builtin.copy:
        content: "{{ {'interpreter': ansible_python_interpreter, 'command': iotuner_command,
                      'fingerprint': ansible_facts.iotuner_fingerprint,
                      'rendered': rendered} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def playbook(
    tmp_path: Path, inventory: dict[str, Any], *args: str, play: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """ansible-playbook PLAY (or `play`) over `inventory`, the checkout kept off the host's
    python path."""
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    (tmp_path / "play.yml").write_text(PLAY)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "IOTUNER_STATE_DIR")}
    env |= {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_ROLES_PATH": str(ROLES),
            "ANSIBLE_LIBRARY": f"{REPO}/playbooks/library:{ROLES}/iotuner_apply/library",
            "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
            "ANSIBLE_REMOTE_TMP": str(tmp_path / "ansible-remote")}  # fmt: skip
    return subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "inventory.yml"),
         str(play or tmp_path / "play.yml"), *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900,
    )  # fmt: skip


def test_the_role_installs_the_host_part_and_the_modules_run_with_it(tmp_path: Path) -> None:
    """Over 30 s: three playbook runs and a pip install (module docstring)."""
    if os.geteuid() != 0 or shutil.which("ansible-playbook") is None:
        pytest.skip("needs root and ansible-playbook")
    venv = tmp_path / "host" / "iotuner"
    plan = tmp_path / "plan.yaml"
    entries = (PlanEntry("vm.dirty_ratio", "host", 20),)
    plan.write_text(plan_text(Plan(1, "2026-11-28T09:00:00+00:00", "node1", "advise",
                                   "stream-read", entries)))  # fmt: skip
    out = tmp_path / "seen.json"
    inventory = {"all": {"hosts": {"node1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "iotuner_install_python": sys.executable, "iotuner_install_venv": str(venv),
        "iotuner_install_link": "",
        # hatchling is installed here (the test extra): no index needed for the build.
        "iotuner_install_build_args": ["--no-build-isolation"],
        "plan": str(plan), "conf_root": str(tmp_path / "conf"), "out": str(out)}}}}  # fmt: skip
    first = playbook(tmp_path, inventory)
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    seen = json.loads(out.read_text())
    python = venv / "bin" / "python"
    assert seen["interpreter"] == str(python)
    assert seen["command"] == [str(venv / "bin" / "iotuner")]
    assert len(seen["fingerprint"]) == 12
    assert not seen["rendered"].get("failed")
    assert not (tmp_path / "conf").exists()  # check mode wrote nothing

    # The venv is the host part: iotuner from the wheel, no extra, not this checkout.
    probe = "import importlib.util as u, tuner; print(tuner.__file__); " + "; ".join(
        f"print({m!r}, u.find_spec({m!r}) is not None)"
        for m in ("scipy", "skopt", "sklearn", "matplotlib", "ansible", "testinfra")
    )
    bare = {"PATH": os.environ["PATH"]}
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                           check=True, env=bare).stdout.split("\n")  # fmt: skip
    assert found[0].startswith(str(venv))
    assert found[1:7] == ["scipy False", "skopt False", "sklearn False", "matplotlib False",
                          "ansible False", "testinfra True"]  # fmt: skip

    # The host's iotuner works, and a command of an extra says which one to install.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {"PATH": os.environ["PATH"], "IOTUNER_STATE_DIR": str(state)}
    history = subprocess.run([venv / "bin" / "iotuner", "history", "--json"], capture_output=True,
                             text=True, cwd=tmp_path, env=env)  # fmt: skip
    assert history.returncode == 0, history.stderr
    # verify runs its generated testinfra suite with the venv's pytest: the sysctl is live as
    # planned, its sysctl.d file was never written, so one check fails (exit 1), none errs.
    conf = tmp_path / "verify-conf"
    conf.mkdir()
    live = int(Path("/proc/sys/vm/dirty_ratio").read_text())
    as_live = tmp_path / "as-live.yaml"
    entries = (PlanEntry("vm.dirty_ratio", "host", live),)
    as_live.write_text(plan_text(Plan(1, "2026-11-28T09:00:00+00:00", "node1", "advise",
                                      "stream-read", entries)))  # fmt: skip
    verified = subprocess.run([venv / "bin" / "iotuner", "verify", str(as_live), "--json",
                               "--conf-root", str(conf)], capture_output=True, text=True,
                              cwd=tmp_path, env=env)  # fmt: skip
    assert verified.returncode == 1, verified.stderr
    checks = {c["id"]: c["passed"] for c in json.loads(verified.stdout)["checks"]}
    assert [c for c, passed in checks.items() if not passed] == [
        str(conf / "etc" / "sysctl.d" / "60-iotuner.conf")
    ], checks
    assert len(checks) > 1
    tune = subprocess.run([venv / "bin" / "iotuner", "tune", "--budget", "3"],
                          capture_output=True, text=True, cwd=tmp_path, env=env)  # fmt: skip
    assert tune.returncode == 1
    assert re.fullmatch(
        r"iotuner: iotuner tune needs iotuner\[tune\], not installed here \(\w+ is missing\): "
        r"pip install 'iotuner\[tune\]'\n", tune.stderr), tune.stderr  # fmt: skip

    # A second run with the same wheel changes nothing.
    again = playbook(tmp_path, inventory)
    assert again.returncode == 0, again.stdout[-6000:]
    assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout

    # The fleet playbook's first play is the same role: with the wheel in place, nothing to do.
    fleet = playbook(tmp_path, inventory, "--tags", "install", "-e", "iotuner_fleet_install=true",
                     play=REPO / "playbooks" / "fleet.yml")  # fmt: skip
    assert fleet.returncode == 0, fleet.stdout[-6000:]
    assert "iotuner_install : Make the venv" in fleet.stdout
    assert "changed=0" in fleet.stdout.split("PLAY RECAP", 1)[1], fleet.stdout


def test_a_source_that_is_no_checkout_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    if shutil.which("ansible-playbook") is None:
        pytest.skip("needs ansible-playbook")
    venv = tmp_path / "host" / "iotuner"
    inventory = {"all": {"hosts": {"node1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "iotuner_install_venv": str(venv), "iotuner_install_link": "",
        # Where an installed iotuner's role would look: inside the package, no pyproject.toml.
        "iotuner_install_source": str(tmp_path)}}}}  # fmt: skip
    done = playbook(tmp_path, inventory)
    assert done.returncode != 0
    assert f"{tmp_path} is not an iotuner checkout (no pyproject.toml)" in done.stdout, done.stdout
    assert not venv.parent.exists()
