"""An idle `iotuner daemon` over 60 s: CPU share of one core and RSS, against the targets.

    python -m benchmarks.daemon_idle [--seconds 60] [--drift-interval 60] [--sample-interval 5]

As root. Brings up the lab's single-disk in a private state directory, applies a two-entry plan
to its disk (real `iotuner apply`, managed files under a temporary --conf-root), starts the
daemon with hotplug, workload watch, a metrics textfile and the 127.0.0.1 endpoint on, waits
until it answers on its socket, then samples its CPU time and RSS once a second. Beside it, in
the same minute, a bare `python -c "import time; time.sleep(...)"` is measured the same way,
so the figures can be read against the interpreter's own floor on this machine. Everything is
rolled back and torn down at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

TARGET_CPU_PERCENT = 1.0
TARGET_RSS_MB = 80.0

_CONFIG = """\
[daemon]
socket = "{socket}"
drift_interval = {drift}

[workload]
sample_interval = {sample}

[metrics]
textfile = "{textfile}"
listen = "127.0.0.1:{port}"
"""


def _iotuner(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner.cli", *args], env=env, check=True,
                          capture_output=True, text=True)  # fmt: skip


def _measure(procs: dict[str, psutil.Process], seconds: float) -> dict[str, dict[str, float]]:
    """CPU share of one core and peak/mean RSS of each process over the same `seconds`."""
    start = {name: p.cpu_times() for name, p in procs.items()}
    rss: dict[str, list[float]] = {name: [] for name in procs}
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for name, p in procs.items():
            rss[name].append(p.memory_info().rss / 2**20)
        time.sleep(1.0)
    wall = time.monotonic() - t0
    out = {}
    for name, p in procs.items():
        end = p.cpu_times()
        used = (end.user - start[name].user) + (end.system - start[name].system)
        out[name] = {
            "cpu_percent": 100 * used / wall,
            "rss_peak_mb": max(rss[name]),
            "rss_mean_mb": sum(rss[name]) / len(rss[name]),
        }
    return out


def main() -> int:
    """Run the benchmark and print the table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--drift-interval", type=float, default=60.0)
    parser.add_argument("--sample-interval", type=float, default=5.0)
    parser.add_argument("--port", type=int, default=19781)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("benchmarks.daemon_idle: run as root (lab, apply, daemon)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="iotuner-bench-daemon-"))
    env = {**os.environ, "IOTUNER_STATE_DIR": str(work / "state")}
    conf_root = work / "conf"
    conf_root.mkdir()
    daemon: subprocess.Popen[bytes] | None = None
    floor: subprocess.Popen[bytes] | None = None
    try:
        lab = json.loads(_iotuner("lab", "up", "single-disk", "--json", env=env).stdout)
        disk = lab["disks"][0]["device"].removeprefix("/dev/")
        plan = work / "plan.yaml"
        plan.write_text(json.dumps({
            "plan_version": 1, "created": "2026-11-22T00:00:00+00:00", "host": "lab",
            "source": "advise", "workload": "stream-read", "search": [], "measured": None,
            "entries": [
                {"key": "block.read_ahead_kb", "target": disk, "value": 4096},
                {"key": "block.scheduler", "target": disk, "value": "mq-deadline"},
            ],
        }))  # fmt: skip
        _iotuner("apply", str(plan), "--conf-root", str(conf_root), env=env)
        socket_path = work / "iotuner.sock"
        config = work / "iotuner.toml"
        config.write_text(_CONFIG.format(socket=socket_path, drift=args.drift_interval,
                                         sample=args.sample_interval, port=args.port,
                                         textfile=work / "iotuner.prom"))  # fmt: skip
        started = time.monotonic()
        log = (work / "daemon.log").open("w")
        daemon = subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "daemon", "--config", str(config)],
            env=env, stderr=log,
        )  # fmt: skip
        while not socket_path.exists():
            if daemon.poll() is not None or time.monotonic() - started > 60:
                raise SystemExit(f"daemon did not start: {(work / 'daemon.log').read_text()}")
            time.sleep(0.1)
        ready_s = time.monotonic() - started
        floor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100000)"])
        time.sleep(2.0)  # past the start-up check
        figures = _measure({"daemon": psutil.Process(daemon.pid),
                            "bare python": psutil.Process(floor.pid)}, args.seconds)  # fmt: skip
    finally:
        for proc in (daemon, floor):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=120)
        subprocess.run([sys.executable, "-m", "tuner.cli", "rollback", "--to", "0"], env=env,
                       capture_output=True, check=False)  # fmt: skip
        subprocess.run([sys.executable, "-m", "tuner.cli", "lab", "down"], env=env,
                       capture_output=True, check=False)  # fmt: skip
        subprocess.run(["rm", "-rf", str(work)], check=False)
    d, f = figures["daemon"], figures["bare python"]
    print(f"idle daemon over {args.seconds:.0f} s (drift check every {args.drift_interval:g} s, "
          f"diskstats every {args.sample_interval:g} s); ready after {ready_s:.1f} s")  # fmt: skip
    print("| process | CPU % of one core | target | ratio | RSS peak MB | target | ratio |")
    print("|---|---|---|---|---|---|---|")
    print(f"| iotuner daemon | {d['cpu_percent']:.3f} | {TARGET_CPU_PERCENT:g} | "
          f"{d['cpu_percent'] / TARGET_CPU_PERCENT:.3f} | {d['rss_peak_mb']:.1f} | "
          f"{TARGET_RSS_MB:g} | {d['rss_peak_mb'] / TARGET_RSS_MB:.3f} |")  # fmt: skip
    print(f"| bare python (floor) | {f['cpu_percent']:.3f} | | | {f['rss_peak_mb']:.1f} | | |")
    ok = d["cpu_percent"] < TARGET_CPU_PERCENT and d["rss_peak_mb"] < TARGET_RSS_MB
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
