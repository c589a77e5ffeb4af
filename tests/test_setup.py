"""What setting iotuner up installs, and what the README tells those who do it by hand."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def setup(*args: str) -> subprocess.CompletedProcess[str]:
    # --list prints the Debian packages and stops before dpkg, apt or pip run.
    return subprocess.run(
        [str(REPO / "scripts" / "setup"), *args], capture_output=True, text=True, timeout=60
    )


def test_only_the_test_setup_installs_chromium() -> None:
    plain, dev = setup("--list"), setup("--dev", "--list")
    assert plain.returncode == 0 and dev.returncode == 0
    assert "fio" in plain.stdout.split() and "chromium" not in plain.stdout.split()
    assert dev.stdout.split() == [*plain.stdout.split(), "chromium"]
    # scripts/demo sets up without --dev; scripts/test with it.
    assert re.search(r"^scripts/setup$", (REPO / "scripts/demo").read_text(), re.M)
    assert re.search(r"^scripts/setup --dev$", (REPO / "scripts/test").read_text(), re.M)


def test_an_unknown_setup_option_is_refused_before_anything_is_installed() -> None:
    result = setup("--list", "--devv")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "scripts/setup: unknown option --devv (use --dev, --list)\n"


def test_the_readme_gives_the_python_version_and_a_pip_line_for_installing_by_hand() -> None:
    readme = (REPO / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    version = pyproject["project"]["requires-python"].removeprefix(">=")
    assert f"Python {version} or later" in quick_start
    # Everything in one command; `pip install .` alone is the host part (docs/fleet.md).
    assert re.search(r"^pip install '\.\[all\]'\s", quick_start, re.M)
    packages = setup("--list").stdout.split()
    assert f"apt-get install {' '.join(packages)}\n" in quick_start
    # The quick start's two commands stay as they are.
    assert "scripts/demo      # set everything up" in quick_start
    assert "scripts/test      # set everything up" in quick_start


def test_setup_installs_every_part_and_the_dev_setup_the_test_tools_too() -> None:
    script = (REPO / "scripts" / "setup").read_text()
    assert re.search(r'"\$\{PIP\[@\]\}" "\.\[all\]"$', script, re.M)
    assert re.search(r'"\$\{PIP\[@\]\}" -e "\.\[test\]"$', script, re.M)
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    optional = extras["optional-dependencies"]
    assert optional["all"] == ["iotuner[tune,report,apply]"]
    assert "iotuner[all]" in optional["test"]
    # The host part carries none of the heavy packages.
    heavy = ("scikit-optimize", "matplotlib", "ansible-core", "scipy", "scikit-learn")
    assert not [d for d in extras["dependencies"] if d.startswith(heavy)]
