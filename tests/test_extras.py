"""The host part runs without the extras, and a command of an extra says which one to install.

A managed host installs only pyproject's dependencies. tests/host_part.py runs `iotuner` with
the extras' packages made impossible to import (as on such a host); tests/fleet/test_install.py
installs the real wheel into a real venv. The import-linter contract in pyproject.toml holds
the same boundary statically.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from tests.host_part import EXTRAS_PACKAGES, import_modules, iotuner
from tuner.extras import EXTRA_OF, missing_extra

REPO = Path(__file__).resolve().parents[1]
ONE_LINE = re.compile(
    r"iotuner: iotuner (?P<cmd>[\w \[\]-]+) needs iotuner\[(?P<extra>\w+)\], not installed here "
    r"\((?P<module>\w+) is missing\): pip install 'iotuner\[(?P=extra)\]'\n"
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("extras") / "host", Shape(disks=4, controllers=1,
                                                                    pci_functions=6))  # fmt: skip


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir(mode=0o700)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("probe", "--json"),
        ("advise", "--workload", "stream-read"),
        ("rules", "list"),
        ("history", "--json"),
        ("rollback",),
        ("--help",),
        ("tune", "--help"),
        ("report", "--help"),
    ],
    ids=lambda a: " ".join(a),
)
def test_the_host_commands_run_without_any_extra(
    args: tuple[str, ...], host: Path, state: Path
) -> None:
    root = ["--root", str(host)] if args[0] in ("probe", "advise") else []
    done = iotuner(*args, *root, state=state)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "is missing" not in done.stderr
    if args[0] == "probe":
        assert json.loads(done.stdout)["block_devices"]


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("tune", "--budget", "3"), "tune"),
        (("report", "--out", "{tmp}/r.html"), "report"),
    ],
    ids=lambda a: a if isinstance(a, str) else " ".join(a),
)
def test_a_command_of_a_missing_extra_says_which_in_one_line(
    args: tuple[str, ...], extra: str, state: Path, tmp_path: Path
) -> None:
    done = iotuner(*(a.format(tmp=tmp_path) for a in args), state=state)
    assert done.returncode == 1
    found = ONE_LINE.fullmatch(done.stderr)
    assert found is not None, done.stderr
    assert found["cmd"] == args[0] and found["extra"] == extra
    assert EXTRA_OF[found["module"]] == extra
    assert not (tmp_path / "r.html").exists()


def test_status_and_the_daemon_run_without_any_extra(state: Path) -> None:
    # No daemon runs for this state directory: status says so in one line, exit 1.
    status = iotuner("status", state=state)
    assert status.returncode == 1 and len(status.stderr.splitlines()) == 1, status.stderr
    assert "is missing" not in status.stderr
    config = state / "iotuner.toml"
    config.write_text("")
    checked = iotuner("daemon", "--config", str(config), "--check-config", state=state)
    assert checked.returncode == 0, checked.stderr
    # A re-tune runs `iotuner tune`: allowed without the tune part, it could never run.
    config.write_text('[retune]\nenabled = true\ntarget = "/srv"\n')
    refused = iotuner("daemon", "--config", str(config), "--check-config", state=state)
    found = ONE_LINE.fullmatch(refused.stderr)
    assert refused.returncode == 1 and found is not None, refused.stderr
    assert found["cmd"] == "daemon with [retune] enabled" and found["extra"] == "tune"
    assert iotuner("daemon", "--config", str(config), "--check-config", blocked=("x",),
                   state=state).returncode == 0  # fmt: skip


def test_apply_measure_without_the_tune_extra_is_refused_before_anything_is_applied(
    state: Path, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("version: 1\nentries:\n  - {key: vm.dirty_ratio, target: host, value: 20}\n")
    done = iotuner("apply", str(plan), "--measure", state=state)
    found = ONE_LINE.fullmatch(done.stderr)
    assert done.returncode == 1 and found is not None, done.stderr
    assert found["cmd"] == "apply --measure" and found["extra"] == "tune"
    assert list(state.iterdir()) == []  # no journal: nothing was applied


def _module_imports(path: Path) -> set[str]:
    """Every iotuner module an Ansible module imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in ("tuner", "probes")}


def test_the_ansible_modules_import_only_the_host_part() -> None:
    modules = sorted(REPO.glob("playbooks/**/library/*.py")) + sorted(
        REPO.glob("playbooks/module_utils/*.py")
    )
    imports = sorted(set().union(*map(_module_imports, modules)))
    assert "tuner.plan" in imports and "probes.host" in imports  # the walk finds them
    # On a managed host Ansible ships its own module_utils with the module: ansible is there.
    blocked = tuple(p for p in EXTRAS_PACKAGES if p != "ansible")
    done = import_modules(*imports, blocked=blocked)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_module_missing_from_the_host_part_itself_is_not_blamed_on_an_extra() -> None:
    assert (
        missing_extra(ModuleNotFoundError("No module named 'yaml'", name="yaml"), "probe") is None
    )
    err = missing_extra(ModuleNotFoundError("x", name="matplotlib.pyplot"), "report")
    assert err is not None and "pip install 'iotuner[report]'" in str(err)
