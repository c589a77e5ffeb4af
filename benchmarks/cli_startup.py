"""How long a cheap `iotuner` command takes to start, and what it imports.

    python -m benchmarks.cli_startup [--repeat 15] [--against DIR]

Every `iotuner` call (about 160 in the test suite alone) pays for Python's start, typer's and
rich's imports and then iotuner's own. Each command below runs as a user runs it (`python -m
tuner.cli ...` in a fresh process, from this checkout), its wall and CPU (user + system)
seconds the medians of --repeat runs (CPU time moves less with the machine's load). Two floors
are measured the same way beside them: the interpreter alone (`python -c pass`) and the
interpreter with typer imported (what any typer program pays). With --against
DIR (another checkout of iotuner, e.g. `git archive COMMIT | tar -x -C DIR`), every command
also runs from DIR, interleaved (this tree, DIR, this tree, DIR...), and the ratio is printed:
both trees meet the same load. The last column is how many modules the command imported and
which of the heavy packages among them (one run with -X importtime).

The probe and advise rows read a small synthetic host (benchmarks/synthetic_host.py, 8 disks),
so they measure start-up and the command's own work on a tiny host, not the live machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synthetic_host import Shape, build

REPO = Path(__file__).resolve().parents[1]

# Packages a cheap command should not need; the column says which a command imported anyway.
HEAVY = ("skopt", "sklearn", "numpy", "scipy", "matplotlib", "ansible", "yaml", "pyudev", "psutil")


def _commands(host: Path) -> dict[str, list[str]]:
    return {
        "iotuner --help": ["--help"],
        "iotuner --version": ["--version"],
        "iotuner status --json": ["status", "--json"],
        "iotuner probe --root H --json": ["probe", "--root", str(host), "--json"],
        "iotuner advise --root H --json": ["advise", "--root", str(host), "--json"],
    }


def _env(state: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["IOTUNER_STATE_DIR"] = str(state)
    # As tests/cli.py runs it: a user's shell exports neither.
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # status exits 1 (no daemon), which is its answer, not a failure of the run.
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _imports(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    """How many modules `argv` imports, and which HEAVY packages among them."""
    err = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    ).stderr  # fmt: skip
    names = [
        line.rsplit("|", 1)[1].strip()
        for line in err.splitlines()
        if line.startswith("import time:") and "|" in line and "self [us]" not in line
    ]
    tops = {name.split(".")[0] for name in names}
    return len(names), [h for h in HEAVY if h in tops]


def main() -> None:
    """Measure the commands and the floors, interleaved, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", type=Path, help="another checkout of iotuner to compare")
    args = parser.parse_args()
    trees = [REPO] if args.against is None else [REPO, args.against.resolve()]
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        state.mkdir(mode=0o700)
        env = _env(state)
        host = build(Path(tmp) / "host", Shape(disks=8, controllers=2, pci_functions=8))
        python = [sys.executable]
        floors = {
            "python -c pass": [*python, "-c", "pass"],
            "python -c 'import typer'": [*python, "-c", "import typer"],
        }
        runs = {name: [*python, "-m", "tuner.cli", *argv] for name, argv in _commands(host).items()}
        times: dict[tuple[str, Path], list[tuple[float, float]]] = {}
        for _ in range(args.repeat):
            for name, argv in floors.items():
                times.setdefault((name, REPO), []).append(_run(argv, REPO, env))
            for name, argv in runs.items():
                for tree in trees:
                    times.setdefault((name, tree), []).append(_run(argv, tree, env))
        counts = {(name, tree): _imports(runs[name], tree, env) for name in runs for tree in trees}
    load = os.getloadavg()
    print(
        f"median of {args.repeat} runs each, interleaved; load average "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (2 cores, shared); wall and CPU (user + "
        "system) seconds; the CPU figure is the steadier one on a loaded machine"
    )
    wall = {key: statistics.median(w for w, _ in values) for key, values in times.items()}
    cpu = {key: statistics.median(c for _, c in values) for key, values in times.items()}
    for name in floors:
        print(f"{name:31s} wall {wall[(name, REPO)]:6.3f}  cpu {cpu[(name, REPO)]:6.3f}")
    header = f"{'command':31s} {'wall':>6s} {'cpu':>6s}"
    if len(trees) == 2:
        header += f"  {'against':>13s}  {'ratio':>11s}"
    print(header + "  modules (heavy ones)")
    for name in runs:
        ours = (wall[(name, REPO)], cpu[(name, REPO)])
        line = f"{name:31s} {ours[0]:6.3f} {ours[1]:6.3f}"
        if len(trees) == 2:
            theirs = (wall[(name, trees[1])], cpu[(name, trees[1])])
            line += f"  {theirs[0]:6.3f} {theirs[1]:6.3f}"
            line += f"  {ours[0] / theirs[0]:5.2f} {ours[1] / theirs[1]:5.2f}"
        for tree in trees:
            count, heavy = counts[(name, tree)]
            line += f"  {count} ({', '.join(heavy) or '-'})"
        print(line)


if __name__ == "__main__":
    main()
