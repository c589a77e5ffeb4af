"""Capture fidelity and cost: an application captured, reproduced, and the reproduction
captured again, on the lab's modelled hard disk (issue 32).

    python -m benchmarks.capture [--seconds 12] [--readers 4] [--reader sha256sum|tar]
                                 [--no-pgbench] [--no-backup] [--tpcb] [--rounds 2]
                                 [--cost-only] [--baseline DIR] [--check-rounds 1]
                                 [--check-baseline DIR] [--keep DIR] [--out FILE]

As root, on a lab like `hdd` (one modelled 7200 rpm disk, nbdkit) with xfs on it, in
$IOTUNER_STATE_DIR (/tmp/iotuner-bench-capture-state when unset):

1. backup: READERS large files are written and their pages dropped; `iotuner capture` (a
   subprocess) records the disk while READERS concurrent `sha256sum` processes (--reader tar:
   `tar -cf - FILE | cat`) read one file each; the capture's CPU time (user + system, from
   wait4) over its wall time is its cost;
2. the fingerprint's reproduction (`iotuner capture --reproduce`, its region the files'
   footprint) is run on a scratch file in the lab's xfs (the backup's files removed first)
   by `iotuner capture --check --target --against`, which captures it (--check-rounds
   times; with --check-baseline DIR, DIR's reproduction of the same fingerprint before each
   of this one's, interleaved, both checked by this checkout): the table prints each
   fidelity figure (request sizes as the histograms' total variation distance, read share,
   streams, mean queue depth) of the original and the reproduction, and their difference
   (issue 32's target: each within 15 %);
3. pgbench: PostgreSQL 15 (initdb on the lab's xfs, in a memory cgroup of 160 MiB, so its
   page cache is well short of the 300 MB database) runs `pgbench -S` (select-only, 4
   clients; --tpcb: TPC-B-like) while it is captured; its reproduction (which writes: hint
   bits, statistics) is checked the same way, once postgres is removed;
4. cost at the disk's full rate: `iotuner capture` idle (the interpreter's start-up and the
   poll loop), then beside plain fio reading the disk as fast as it goes, (a) sequential
   1 MiB direct reads at depth 4, (b) sequential 4 KiB direct reads at depth 8 (the most
   requests a second the disk serves), each its CPU share of one core, whole and beyond the
   same round's idle capture's CPU time (issue 32's target: under 2 %); --rounds rounds
   (default 2), interleaved (idle, 1 MiB, 4 KiB, idle, ...), with the load average of each;
   with --baseline DIR (another checkout, e.g. `git archive REV | tar -x -C DIR`) each round
   is run by DIR's capture too, right after this one's: the two side by side.

The machine may be shared: the load average is printed with the figures. The lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.pg import Cluster
from tuner.lab import lab_down, lab_up, parse_spec
from tuner.lab.system import LabError
from tuner.trials.memcap import memory_cap

SPEC = """\
name: capture-hdd
description: The hdd spec's modelled disk with xfs on it, for the capture benchmark.
disks:
  - name: d0
    size: 2GiB
    fs: xfs
    model: {kind: hdd, rpm: 7200, outer_mbps: 200, inner_mbps: 100, zones: 16,
            seek_track_ms: 1.0, seek_full_ms: 16, overhead_ms: 0.2, cache_kib: 4096,
            queue_depth: 32, seed: 1}
  - name: d1
    size: 2GiB
    model: {kind: hdd, rpm: 7200, outer_mbps: 200, inner_mbps: 100, zones: 16,
            seek_track_ms: 1.0, seek_full_ms: 16, overhead_ms: 0.2, cache_kib: 4096,
            queue_depth: 32, seed: 1}
"""
"""d1 is d0's twin with no file system, unused since the checks run on a scratch file on d0's
xfs: a raw block device's page cache reads 256 KiB where a file's reads 128 KiB."""
FILE_MIB = 192
PG_PORT = "5439"
"""The benchmark's own cluster's port (benchmarks/pg.py), never the system cluster's 5432."""
PG_SCALE = 20
"""pgbench's scale: 20 is 2,000,000 accounts, about 300 MB with its indexes."""
PG_MEMORY = 160 << 20
"""postgres' memory cgroup: 16 MB shared buffers, the backends, and a page cache well short
of the database, so select-only reads reach the disk (as issue 32's 1.7 GB database did
with 448 MB of page cache)."""
FIDELITY = ("request sizes (histogram)", "read share (bytes)", "streams", "queue depth (mean)")
SHOWN = ("requests/s", "MB/s", "sequential share", "writes per flush")


def _cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner.cli", *args], capture_output=True,
                          text=True, check=False, **kw)  # fmt: skip


def _drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _captured(
    device: str, seconds: float, out: Path, during: Any, tree: Path | None = None
) -> dict[str, float]:
    """`iotuner capture` (of the checkout `tree`, this one when None) on `device` while
    `during()` runs (started once the capture records); returns its CPU seconds, wall seconds
    and CPU share of one core."""
    began = time.monotonic()
    env = None if tree is None else {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    child = subprocess.Popen([sys.executable, "-m", "tuner.cli", "capture", "--device", device,
                              "--seconds", str(seconds), "--out", str(out)], cwd=tree, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    instance = Path(f"/sys/kernel/tracing/instances/iotuner-{child.pid}/events")
    while not instance.is_dir() and child.poll() is None:
        time.sleep(0.02)
    recording = time.monotonic()
    worker = threading.Thread(target=during)
    worker.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - began
    worker.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        assert child.stderr is not None
        raise SystemExit(f"capture failed: {child.stderr.read().strip()}")
    cpu = usage.ru_utime + usage.ru_stime
    # The interpreter's start-up is not the capture's: counted all the same (an upper bound).
    return {"cpu_s": cpu, "wall_s": wall, "recording_s": time.monotonic() - recording,
            "core_share": cpu / wall}  # fmt: skip


def _busiest(path: Path) -> dict[str, Any]:
    devices = json.loads(path.read_text())["devices"]
    return max(devices, key=lambda d: d["bytes"])


def backup_row(device: str, mount: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Concurrent readers (sha256sum, or tar piped to cat) captured, reproduced and checked."""
    files = [Path(mount, f"backup-{i}.dat") for i in range(args.readers)]
    for f in files:
        subprocess.run(["dd", "if=/dev/urandom", f"of={f}", "bs=1M", f"count={FILE_MIB}",
                        "status=none", "conv=fsync"], check=True)  # fmt: skip
    _drop_caches()
    original = work / "backup.json"
    # GNU tar writing to /dev/null itself skips reading the data: piped through cat.
    tar = ["sh", "-c", 'tar -cf - "$1" | cat > /dev/null', "sh"]
    command = {"sha256sum": ["sha256sum"], "tar": tar}[args.reader]

    def backup() -> None:
        procs = [subprocess.Popen(["timeout", str(args.seconds - 2), *command, str(f)],
                                  stdout=subprocess.DEVNULL) for f in files]  # fmt: skip
        for p in procs:
            p.wait()

    cost = _captured(device, args.seconds, original, backup)
    for f in files:
        f.unlink()
    checks = _check_rounds("backup", original, args, mount, work)
    return {"row": f"backup: {args.readers} x {args.reader}", "cost": cost, **checks}


def _check_rounds(
    name: str, original: Path, args: argparse.Namespace, mount: str, work: Path
) -> dict[str, Any]:
    """`_checked` --check-rounds times, this checkout's reproduction and, with
    --check-baseline DIR, DIR's reproduction of the same fingerprint (both checked by this
    checkout), interleaved: DIR, this, DIR, this. The last round's check of this checkout's
    reproduction is the row; every check is kept."""
    trees: list[Path | None] = [args.check_baseline, None] if args.check_baseline else [None]
    checks: list[dict[str, Any]] = []
    for round_ in range(1, args.check_rounds + 1):
        for tree in trees:
            done = _checked(name, original, args.seconds, mount, work, tree)
            checks.append({"round": round_, "tree": str(tree or "this"),
                           "load": os.getloadavg()[0], **done})  # fmt: skip
    return {**(checks[-1] if checks else {}), "checks": checks}


def _checked(
    name: str, original: Path, seconds: float, mount: str, work: Path, tree: Path | None = None
) -> dict[str, Any]:
    """The reproduction of `original`, written by the checkout `tree` (this one when None),
    checked by this checkout on a scratch file in `mount` (`capture --check --target`: the
    lab's xfs, where the application ran; a raw block device's page cache reads 256 KiB
    where a file's reads 128 KiB at the same readahead): the check's document and the job."""
    job = work / f"{name}{'-baseline' if tree else ''}.fio"
    footprint = _busiest(original)["footprint_bytes"]
    source = original
    if tree is not None:
        # A checkout before the device's read_ahead_kb was recorded refuses the field.
        doc = json.loads(original.read_text())
        for dev in doc["devices"]:
            dev.pop("read_ahead_kb", None)
        source = work / f"{name}-baseline.json"
        source.write_text(json.dumps(doc))
    done = _cli("capture", "--reproduce", str(source), "--region", str(footprint),
                "--out", str(job), cwd=tree)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    _drop_caches()
    check = _cli("capture", "--check", str(job), "--target", mount, "--seconds",
                 str(seconds - 2), "--against", str(original), "--json")  # fmt: skip
    if check.returncode != 0:
        raise SystemExit(check.stderr)
    return {"job": job.read_text(), **json.loads(check.stdout)}


def pgbench_row(device: str, mount: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """pgbench select-only on a database larger than postgres' page cache, captured,
    reproduced and checked; postgres runs in a memory cgroup of PG_MEMORY."""
    original = work / "pgbench.json"
    tps: list[str] = []
    with memory_cap(PG_MEMORY) as cap:
        pg = Cluster(Path(mount), cap, PG_PORT)
        try:
            pg.init(PG_SCALE)
            _drop_caches()

            def select_only() -> None:
                out = pg.pgbench(*([] if args.tpcb else ["-S"]), seconds=args.seconds - 2)
                tps.extend(ln for ln in out.splitlines() if ln.startswith("tps"))

            cost = _captured(device, args.seconds, original, select_only)
        finally:
            pg.remove()
    checked = _check_rounds("pgbench", original, args, mount, work)
    mode = "TPC-B-like" if args.tpcb else "-S"
    return {"row": f"pgbench {mode}, scale {PG_SCALE}, {PG_MEMORY >> 20} MiB cgroup",
            "cost": cost, "tps": tps, **checked}  # fmt: skip


def cost_rows(
    device: str, seconds: float, work: Path, rounds: int, baseline: Path | None = None
) -> list[dict[str, Any]]:
    """The capture's CPU share idle and beside plain fio at the disk's full rate, in
    `rounds` interleaved rounds (idle, 1 MiB, 4 KiB; idle, ...): each round's fio rows are
    taken beyond that round's idle capture, so a load that changes between rounds moves both.
    With `baseline` (another checkout) each round is run by it too, right after this one's."""
    rows: list[dict[str, Any]] = []
    trees: list[Path | None] = [None] if baseline is None else [None, baseline]
    for round_ in range(1, rounds + 1):
        for tree in trees:
            rows += _cost_round(device, seconds, work, round_, tree)
    return rows


def _cost_round(
    device: str, seconds: float, work: Path, round_: int, tree: Path | None
) -> list[dict[str, Any]]:
    """One round of cost rows (idle, 1 MiB, 4 KiB) by the capture of `tree`."""
    label = "" if tree is None else f" [{tree.name}]"
    idle = _captured(device, seconds, work / "idle.json", lambda: None, tree)
    rows: list[dict[str, Any]] = [
        {"row": f"idle (start-up and polling only){label}", "round": round_, "tree": str(tree),
         "cost": idle, "iops": 0.0, "mbps": 0.0, "events": 0, "load": os.getloadavg()[0]}
    ]  # fmt: skip
    for name, bs, depth in (("1 MiB sequential reads, depth 4", "1m", 4),
                            ("4 KiB sequential reads, depth 8", "4k", 8)):  # fmt: skip

        def fio(bs: str = bs, depth: int = depth) -> None:
            subprocess.run(["fio", "--name=full", f"--filename={device}", "--readonly",
                            "--direct=1", "--ioengine=libaio", f"--bs={bs}",
                            f"--iodepth={depth}", "--rw=read", "--size=1G",
                            f"--runtime={seconds - 2}", "--time_based",
                            "--output=/dev/null"], check=True)  # fmt: skip

        out = work / f"cost-{bs}.json"
        cost = _captured(device, seconds, out, fio, tree)
        dev = _busiest(out)
        found = json.loads(out.read_text())
        rows.append({"row": name + label, "round": round_, "tree": str(tree), "cost": cost,
                     "iops": dev["iops"], "mbps": dev["mbps"], "events": found["events"],
                     "lost": found["lost"], "load": os.getloadavg()[0]})  # fmt: skip
    return rows


def main() -> None:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--no-pgbench", action="store_true", help="the backup row only")
    parser.add_argument("--no-backup", action="store_true", help="no backup row")
    parser.add_argument("--tpcb", action="store_true", help="pgbench TPC-B-like, not -S")
    parser.add_argument("--cost-only", action="store_true", help="the cost rows only")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of cost rows")
    parser.add_argument("--baseline", type=Path, help="another checkout to run the cost rows by, "
                        "interleaved with this one's")  # fmt: skip
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reader", choices=("sha256sum", "tar"), default="sha256sum",
                        help="the backup's readers")  # fmt: skip
    parser.add_argument("--check-rounds", type=int, default=1, help="checks of each reproduction")
    parser.add_argument(
        "--check-baseline",
        type=Path,
        help="another checkout whose reproduction of the same fingerprint is checked too",
    )
    parser.add_argument("--keep", type=Path, help="copy fingerprints and jobs to this directory")
    args = parser.parse_args()
    os.environ.setdefault("IOTUNER_STATE_DIR", "/tmp/iotuner-bench-capture-state")
    Path(os.environ["IOTUNER_STATE_DIR"]).mkdir(mode=0o700, exist_ok=True)
    lab = lab_up(parse_spec(SPEC, "capture benchmark", "capture-hdd"))
    rows: list[dict[str, Any]] = []
    try:
        device = lab.disks[0].device
        assert lab.mountpoint is not None
        with tempfile.TemporaryDirectory(prefix="iotuner-bench-capture-") as tmp:
            if not args.cost_only and not args.no_backup:
                rows.append(backup_row(device, lab.mountpoint, args, Path(tmp)))
            if not args.no_pgbench and not args.cost_only:
                try:
                    rows.append(pgbench_row(device, lab.mountpoint, args, Path(tmp)))
                except (subprocess.CalledProcessError, SystemExit) as err:
                    print(
                        f"pgbench row failed: {err} {getattr(err, 'stderr', '')}", file=sys.stderr
                    )
            costs = cost_rows(device, args.seconds, Path(tmp), args.rounds, args.baseline)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                for kept in [*Path(tmp).glob("*.json"), *Path(tmp).glob("*.fio")]:
                    shutil.copy(kept, args.keep / kept.name)
    finally:
        for _ in range(5):
            try:
                lab_down()
                break
            except LabError as err:  # a loop device still held detaches when closed
                print(f"lab down: {err}; again in 2 s", file=sys.stderr)
                time.sleep(2)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (a shared machine)")
    for row in rows:
        for line in row.get("tps", []):
            print(f"{row['row']}: pgbench during the capture: {line}")
        for check in row["checks"]:
            print(f"\n{row['row']}, check {check['round']} by {check['tree']} (load "
                  f"{check['load']:.1f}): fidelity {check['fidelity']:.1%}")  # fmt: skip
            print(f"{'statistic':28} {'original':>12} {'reproduction':>13} {'difference':>11}")
            for r in check["rows"]:
                if r["name"] in FIDELITY or r["name"] in SHOWN:
                    a, b = r["original"], r["reproduction"]
                    diff = "-" if r["difference"] is None else f"{r['difference']:.1%}"
                    print(
                        f"{r['name']:28} {'-' if a is None else f'{a:.4g}':>12} "
                        f"{'-' if b is None else f'{b:.4g}':>13} {diff:>11}"
                    )
            print("\nreproduction:\n" + check["job"])
    idle = {(r["round"], r["tree"]): r["cost"]["cpu_s"] for r in costs if r["iops"] == 0.0}
    print(f"{'capture cost beside':34} {'round':>5} {'req/s':>8} {'MB/s':>7} {'CPU s':>6} "
          f"{'wall s':>7} {'of a core':>9} {'beyond idle':>11} {'load':>5}")  # fmt: skip
    shown = [{"row": r["row"], "round": 1, "tree": "None", "iops": None, "mbps": None,
              "cost": r["cost"], "load": None} for r in rows]  # fmt: skip
    for row in [*shown, *costs]:
        c = row["cost"]
        rate = "-" if row["iops"] is None else f"{row['iops']:.0f}"
        mbps = "-" if row["mbps"] is None else f"{row['mbps']:.0f}"
        load = "-" if row["load"] is None else f"{row['load']:.1f}"
        idle_s = idle.get((row["round"], row["tree"]))  # none without --rounds
        beyond = max(0.0, c["cpu_s"] - (idle_s or 0.0)) / c["wall_s"]
        print(f"{row['row']:34} {row['round']:>5} {rate:>8} {mbps:>7} {c['cpu_s']:6.2f} "
              f"{c['wall_s']:7.1f} {c['core_share']:9.2%} {beyond:11.2%} {load:>5}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "costs": costs, "load": load}, indent=1))


if __name__ == "__main__":
    main()
