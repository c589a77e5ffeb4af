"""Running `iotuner` as a managed host with only the host part installed has it: the extras'
packages (pyproject's tune, report, apply and test) cannot be imported.

A meta path finder in front of every other refuses them, as a venv without them would, so the
test sees the ModuleNotFoundError an administrator's host would give, in a second, without
building a venv. tests/fleet/test_install.py installs the real wheel into a real venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

EXTRAS_PACKAGES = ("scipy", "skopt", "sklearn", "numpy", "joblib", "threadpoolctl",
                   "matplotlib", "pytest", "_pytest", "ansible", "hypothesis")  # fmt: skip
"""What the host part must run without: the extras' packages and what they bring."""

_PRELUDE = """
import sys
BLOCKED = set(sys.argv[1].split(","))

class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
del sys.argv[1]
"""

_CLI = (
    _PRELUDE
    + """
sys.argv[0] = "iotuner"
from tuner.cli import main
main()
"""
)

_IMPORT = (
    _PRELUDE
    + """
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
"""
)


def run(
    code: str, *args: str, blocked: tuple[str, ...] = EXTRAS_PACKAGES, state: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if state is not None:
        env["IOTUNER_STATE_DIR"] = str(state)
    return subprocess.run(
        [sys.executable, "-c", code, ",".join(blocked), *args],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO,
    )  # fmt: skip


def iotuner(
    *args: str, blocked: tuple[str, ...] = EXTRAS_PACKAGES, state: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`iotuner ARGS...` with `blocked` packages not installed."""
    return run(_CLI, *args, blocked=blocked, state=state)


def import_modules(*modules: str, blocked: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Import `modules` with `blocked` not installed; stdout lists any blocked module imported."""
    return run(_IMPORT, *modules, blocked=blocked)
