"""What a host carries: iotuner's host part against everything, each in a fresh venv.

    python -m benchmarks.footprint [--keep DIR]

Builds the wheel from this checkout (pip wheel --no-deps), makes three fresh venvs with this
python (`python -m venv`): one left empty, one with the wheel alone (`pip install WHEEL`, the
host part a managed host gets from roles/iotuner_install) and one with every part
(`pip install 'WHEEL[all]'`: the search, the report's plots, ansible-core). Dependencies come
from pip's configured index. Prints `du -sm` of each venv, what each holds above the empty one,
and the packages installed. Needs the network (or pip's cache); the machine's load does not
matter to these figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIP = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


def du_mb(path: Path) -> int:
    """`du -sm PATH`: the venv's size in MiB as du counts it (allocated blocks)."""
    out = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def venv(path: Path, *install: str) -> Path:
    """A fresh venv at `path` with `install` pip-installed into it; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    python = path / "bin" / "python"
    if install:
        subprocess.run([str(python), *PIP, *install], check=True)
    return python


def packages(python: Path) -> list[str]:
    """The distributions installed in a venv, as `pip list` names them."""
    out = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze",
                          "--disable-pip-version-check"], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    return sorted(line.split("==")[0] for line in out.splitlines() if line)


def main() -> None:
    """Build, install, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="Build the venvs here and keep them.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iotuner-footprint-") as scratch:
        where = args.keep or Path(scratch)
        where.mkdir(parents=True, exist_ok=True)
        dist = where / "dist"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--quiet", "-w", str(dist), str(REPO)], check=True)  # fmt: skip
        (wheel,) = dist.glob("iotuner-*.whl")
        empty = venv(where / "empty")
        host = venv(where / "host", str(wheel))
        full = venv(where / "all", f"{wheel}[all]")
        base = du_mb(where / "empty")
        print(f"python {sys.version.split()[0]}, wheel {wheel.name}; du -sm of fresh venvs")
        print(f"{'venv':<31}{'du -sm':>8}{'above empty':>13}{'packages':>10}")
        for name, python in (("empty (python -m venv)", empty), ("host part (pip install WHEEL)",
                             host), ("everything (WHEEL[all])", full)):  # fmt: skip
            size = du_mb(python.parent.parent)
            print(f"{name:<31}{size:>6} MB{size - base:>10} MB{len(packages(python)):>10}")
        print("host part:", " ".join(packages(host)))
        extra = sorted(set(packages(full)) - set(packages(host)))
        print("everything adds:", " ".join(extra))


if __name__ == "__main__":
    main()
