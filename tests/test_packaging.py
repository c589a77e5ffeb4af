"""`pip install .` (not editable) gives a working `iotuner` that finds its rules and playbooks."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*pip, "-w", str(out), str(REPO)], check=True)
    (found,) = out.glob("iotuner-*.whl")
    return found


def test_wheel_carries_rules_and_playbooks(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "tuner/_data/rules/README.md" in names
    assert "tuner/_data/playbooks/README.md" in names
    assert any(n.startswith("probes/") for n in names)
    assert any(n.endswith(".data/data/share/man/man1/iotuner.1") for n in names)


def test_installed_command_runs_and_finds_its_data(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    # Reuse this interpreter's dependencies; install only iotuner itself, for real (no -e).
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
    subprocess.run([*pip, str(wheel)], check=True)
    version = subprocess.run(
        [env_dir / "bin" / "iotuner", "--version"], capture_output=True, text=True, cwd=tmp_path
    )
    assert version.returncode == 0 and version.stdout.startswith("iotuner ")
    code = "from tuner import resources as r; print(r.rules_dir()); print(r.playbooks_dir())"
    where = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    ).stdout.split()
    for path in where:
        assert str(env_dir) in path and Path(path).is_dir()
