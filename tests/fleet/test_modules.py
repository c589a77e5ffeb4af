"""The fleet's Ansible modules run by Ansible itself (ad hoc, local), on fixture roots and files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tests.fleet.test_retarget import CANARY_PLAN
from tuner.fleet.fingerprint import fingerprint
from tuner.plan import plan_text, read_plan

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("ansible") is None, reason="needs ansible")


def module(tmp_path: Path, name: str, args: dict[str, Any], *flags: str) -> dict[str, Any]:
    """`ansible localhost -m NAME -a ARGS`: the module's result (failed ones included)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
           "ANSIBLE_REMOTE_TMP": str(tmp_path / "ansible-remote")}  # fmt: skip
    done = subprocess.run(
        # --playbook-dir: what ansible-playbook does for fleet.yml, so playbooks/module_utils
        # (the modules' shared import guard) is found as it is there.
        ["ansible", "localhost", "-c", "local", "-M", str(REPO / "playbooks" / "library"),
         "--playbook-dir", str(REPO / "playbooks"),
         "-e", f"ansible_python_interpreter={sys.executable}",
         "-m", name, "-a", json.dumps(args), *flags],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    head, sep, body = done.stdout.partition(" => ")
    assert sep, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(body)
    result["_status"] = head.split("|")[-1].strip()
    return result


def test_facts_are_the_probe_and_the_fingerprint(tmp_path: Path) -> None:
    root = tmp_path / "host"
    build_scenario("well-configured", root)
    expected = fingerprint(probe_host(HostFS(root)), ["sdb"])
    got = module(tmp_path, "iotuner_facts", {"root": str(root), "devices": ["/dev/sdb"]})
    facts = got["ansible_facts"]
    assert got["_status"] == "SUCCESS" and got["changed"] is False
    assert facts["iotuner_fingerprint"] == expected.digest
    assert facts["iotuner_fingerprint_summary"] == expected.summary
    assert facts["iotuner"]["schema_version"] == 1
    assert {"md0", "sdb", "nvme0n1"} <= {d["name"] for d in facts["iotuner"]["block_devices"]}
    assert got["hardware"] == expected.document
    missing = module(tmp_path, "iotuner_facts", {"root": str(root), "devices": ["sdz"]})
    assert missing["_status"] == "FAILED!"
    assert missing["msg"] == f"sdz: no such block device on {root}"


def test_retarget_writes_once_and_honours_check_mode(tmp_path: Path) -> None:
    dest = tmp_path / "state" / "fleet-plan.yaml"
    args = {"plan": plan_text(CANARY_PLAN), "plan_name": "fleet-plans/x.yaml",
            "source_devices": ["sdb", "sdc"], "devices": ["sdd", "sde"], "host": "node7",
            "dest": str(dest)}  # fmt: skip
    first = module(tmp_path, "iotuner_retarget", args)
    assert first["changed"] is True and first["mapping"] == {"sdb": "sdd", "sdc": "sde"}
    written = dest.read_text()
    assert [e.target for e in read_plan(dest).entries][:2] == ["sdd", "/dev/sde"]
    assert oct(dest.parent.stat().st_mode & 0o777) == "0o700"
    assert module(tmp_path, "iotuner_retarget", args)["changed"] is False

    other = {**args, "devices": ["sdf", "sdg"]}
    checked = module(tmp_path, "iotuner_retarget", other, "--check", "--diff")
    assert checked["changed"] is True and dest.read_text() == written
    refused = module(tmp_path, "iotuner_retarget", {**args, "source_devices": ["sdb"],
                                                    "devices": ["sdd"]})  # fmt: skip
    assert refused["_status"] == "FAILED!"
    assert refused["msg"].startswith("fleet-plans/x.yaml: entries[1] (block.read_ahead_kb on")
    assert dest.read_text() == written


def test_without_iotuner_a_module_fails_saying_which_python_lacks_it(tmp_path: Path) -> None:
    # -E -S: neither PYTHONPATH nor site-packages, so `tuner` cannot be imported; Ansible
    # ships the module and its module_utils (the import guard) in its own archive.
    bare = tmp_path / "python-without-iotuner"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -E -S "$@"\n')
    bare.chmod(0o755)
    args = {"plan": "", "plan_name": "p", "dest": str(tmp_path / "plan.yaml")}
    got = module(tmp_path, "iotuner_retarget", args, "-e", f"ansible_python_interpreter={bare}")
    assert got["_status"] == "FAILED!"
    assert got["msg"].startswith(f"iotuner is not installed for {sys.executable}")
    assert not (tmp_path / "plan.yaml").exists()
