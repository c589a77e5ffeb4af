"""The iotuner_daemon role, run for real by ansible-playbook into a temporary configuration root.

One install is shared by the module's tests (an ansible-playbook run costs 5-15 s of a 2-core
VM's time, most of it Ansible starting its modules); each test that runs the playbook again says
why. The role never starts anything here: the conf root is not / and PID 1 is not systemd.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tuner.apply.runner import PlaybookRun, ansible_playbook, environment, parse_run
from tuner.daemon.config import load_config
from tuner.resources import playbooks_dir

if shutil.which("ansible-playbook") is None:  # pragma: no cover - installed with iotuner
    pytest.skip("needs ansible-playbook", allow_module_level=True)

CONF = "etc/iotuner/iotuner.toml"
UNIT = "etc/systemd/system/iotuner.service"
LINK = "etc/systemd/system/multi-user.target.wants/iotuner.service"
# An executable that exists, so `systemd-analyze verify` accepts ExecStart.
EXECUTABLE = shutil.which("iotuner") or sys.executable
SETTINGS: dict[str, Any] = {
    "iotuner_daemon_drift_interval": 15,
    "iotuner_daemon_log_level": "debug",
    "iotuner_daemon_workload_devices": ["sdb", "nvme0n1"],
    "iotuner_daemon_retune": True,
    "iotuner_daemon_retune_target": "/srv/scratch",
    "iotuner_daemon_retune_budget": 5,
    "iotuner_daemon_metrics_listen": "127.0.0.1:9781",
}


@dataclass(frozen=True)
class Install:
    root: Path
    state: Path
    first: PlaybookRun


def run_role(root: Path, state: Path, settings: Mapping[str, Any]) -> PlaybookRun:
    """ansible-playbook playbooks/daemon.yml on localhost, as `iotuner apply` runs its role."""
    extra = {
        "iotuner_conf_root": str(root),
        "iotuner_daemon_executable": EXECUTABLE,
        "ansible_python_interpreter": sys.executable,
        **settings,
    }
    command = [ansible_playbook(), "-i", "localhost,", "-c", "local",
               str(playbooks_dir() / "daemon.yml"), "-e", json.dumps(extra)]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment(state), cwd=state / "ansible",
        timeout=300, check=False,
    )  # fmt: skip
    return parse_run(done.stdout, done.returncode, done.stderr, command)


def files(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every file and link below root: mode and content (a link's target)."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[str(path.relative_to(root))] = (0o777, os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            found[str(path.relative_to(root))] = (stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    base = tmp_path_factory.mktemp("daemon-role")
    root, state = base / "root", base / "state"
    root.mkdir()
    first = run_role(root, state, SETTINGS)
    return Install(root, state, first)


def test_the_role_installs_config_unit_and_link(install: Install) -> None:
    run = install.first
    assert run.ok, run.failures()
    assert run.recap[0].changed == 4  # the directories, the config, the unit, the link
    installed = files(install.root)
    assert set(installed) == {CONF, UNIT, LINK}
    assert installed[CONF][0] == installed[UNIT][0] == 0o644
    # The link `systemctl enable` makes, to the unit's real path (not below the conf root).
    assert installed[LINK][1] == "/etc/systemd/system/iotuner.service"
    # Handlers are for a host where systemd runs and the root is /: skipped here.
    assert all(t.skipped for t in run.tasks if t.handler)


def test_the_config_is_documented_and_holds_the_settings(install: Install) -> None:
    path = install.root / CONF
    config = load_config(path)
    assert config.daemon.drift_interval == 15.0 and config.daemon.log_level == "debug"
    assert config.workload.devices == ("sdb", "nvme0n1")
    assert config.retune.enabled and config.retune.target == "/srv/scratch"
    assert config.retune.budget == 5 and config.metrics.listen == ("127.0.0.1", 9781)
    # What was not set keeps the documented default.
    assert config.daemon.socket == Path("/run/iotuner/iotuner.sock")
    assert config.retune.io_cap_mb == 1024 and config.metrics.textfile is None
    # Every key is there with a comment above it, so the file explains itself.
    lines = path.read_text().splitlines()
    keys = [i for i, line in enumerate(lines) if line and line[0].isalpha() and " = " in line]
    assert len(keys) == 20
    assert all(lines[i - 1].startswith("#") for i in keys)


def test_the_unit(install: Install) -> None:
    unit = (install.root / UNIT).read_text().splitlines()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "WatchdogSec=30",
        f"ExecStart={EXECUTABLE} daemon --config /etc/iotuner/iotuner.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=on-failure",
        "TimeoutStopSec=120",
        "KillMode=mixed",
        "WantedBy=multi-user.target",
    ):
        assert line in unit
    # It must still be able to tune: no setting that makes /sys, /proc/sys or /etc read-only.
    for forbidden in ("ProtectKernelTunables=", "ProtectSystem=strict", "ProtectSystem=full",
                      "PrivateDevices=", "DeviceAllow=", "ProtectClock="):  # fmt: skip
        assert not any(line.startswith(forbidden) for line in unit), forbidden


def test_systemd_accepts_the_unit(install: Install, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("needs systemd-analyze")
    unit = tmp_path / "iotuner.service"
    shutil.copy(install.root / UNIT, unit)
    done = subprocess.run(["systemd-analyze", "verify", str(unit)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    # verify exits 0 on some mistakes (an unknown Type= is "ignoring"): its output must be empty
    # of anything about this unit.
    complaints = [line for line in (done.stdout + done.stderr).splitlines() if "iotuner" in line]
    assert done.returncode == 0 and complaints == [], done.stderr


def test_a_second_run_changes_nothing(install: Install) -> None:
    # A second playbook run: the only way to see idempotence.
    before = files(install.root)
    again = run_role(install.root, install.state, SETTINGS)
    assert again.ok, again.failures()
    assert again.recap[0].changed == 0
    assert files(install.root) == before


def test_a_broken_setting_fails_validation_and_keeps_the_old_file(install: Install) -> None:
    # A run with a bad variable: the validate step is what is under test.
    before = files(install.root)
    broken = run_role(install.root, install.state, {**SETTINGS, "iotuner_daemon_retune_budget": 2})
    assert not broken.ok
    (failed,) = broken.failures()
    assert failed.task == "Install the daemon's configuration"
    why = str(failed.data.get("stderr", "")) + failed.msg
    assert "retune.budget: must be at least 3, not 2" in why
    assert files(install.root) == before
