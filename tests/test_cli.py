"""`iotuner` imports what a command needs when it runs it (issue 31).

Every call paid about 0.4 s of imports before: the version, the whole lab behind any of its
modules, the trials behind `advise`'s --peer, every setting's rules behind `status`. A cheap
command must never import the search (scikit-optimize, numpy, scipy), the plots or Ansible,
and the parts below stay where their command is. Each command runs as a user runs it, in a
fresh process from this checkout, and reports the modules it imported as it exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree

REPO = Path(__file__).resolve().parents[1]

# The extras' packages (pyproject's tune, report and apply) and what they stand on.
HEAVY = ("skopt", "sklearn", "numpy", "scipy", "matplotlib", "ansible")

_RUN = """
import atexit, runpy, sys
out, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = ["iotuner", *args]
runpy.run_module("tuner.cli", run_name="__main__")
"""


def imported(tmp_path: Path, *args: str) -> set[str]:
    """The modules `iotuner ARGS` imported, with a private state directory."""
    out = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["IOTUNER_STATE_DIR"] = str(tmp_path / "state")
    proc = subprocess.run([sys.executable, "-c", _RUN, str(out), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    # status exits 1 with no daemon to ask; what matters is that the command ran.
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return set(out.read_text().split())


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("--version",),
        ("status", "--json"),
        ("probe", "--json"),
        ("advise", "--json"),
        ("rules", "list"),
        ("workloads",),
        ("lab", "status"),
    ],
    ids=lambda args: " ".join(args),
)
def test_a_cheap_command_imports_no_search_plots_or_ansible(
    tmp_path: Path, host: SysTree, args: tuple[str, ...]
) -> None:
    if args[0] in ("probe", "advise"):
        args = (*args, "--root", str(host.root))
    modules = imported(tmp_path, *args)
    assert _heavy(modules) == set()
    assert "tuner.cli_help" in modules  # the app ran (runpy runs tuner.cli as __main__)


def test_version_imports_no_command_and_no_terminal_console(tmp_path: Path) -> None:
    modules = imported(tmp_path, "--version")
    assert {m for m in modules if m.startswith("tuner.commands")} == set()
    assert "rich.console" not in modules


@pytest.mark.parametrize(
    "args", [("status", "--json"), ("history", "--json"), ("rollback",)], ids=" ".join
)
def test_with_nothing_applied_no_plan_is_read(tmp_path: Path, args: tuple[str, ...]) -> None:
    """A plan is read through every setting's rules; with nothing applied there is none."""
    modules = imported(tmp_path, *args)
    assert "tuner.plan" not in modules and "tuner.tunables.registry" not in modules


def test_advise_without_peer_imports_no_transfer_trial(tmp_path: Path, host: SysTree) -> None:
    modules = imported(tmp_path, "advise", "--root", str(host.root), "--json")
    assert "tuner.rules.engine" in modules
    assert "tuner.trials.transfer" not in modules and "tuner.lab.build" not in modules


def test_lab_status_imports_neither_the_builders_nor_the_teardown(tmp_path: Path) -> None:
    modules = imported(tmp_path, "lab", "status")
    assert "tuner.lab.status" in modules
    assert "tuner.lab.build" not in modules and "tuner.lab.teardown" not in modules
