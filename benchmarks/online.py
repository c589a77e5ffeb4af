"""Online tuning of a live backup-like job on the lab's modelled hard disk, with per-window ratios.

    python -m benchmarks.online [--readers 6] [--start-readahead 0] [--online-time 360]
                                [--offline-time 150] [--window 10]

As root. Brings up the lab's `hdd` in a private state directory, makes an ext4 file system on
it and writes one 192 MiB file per reader. The readers are Python processes hashing their file
(sha256, 32 KiB reads as sha256sum does) over and over, in a memory cgroup of 128 MiB
(tuner/trials/memcap.py), so the files (1.1 GB for six) never fit the page cache they have and
every pass reads the disk; each keeps its byte count in a file, which the application metric
(`--metric`, a counter) sums.

1. The harmful start (read_ahead_kb 0 unless told) is measured for six windows: the baseline.
2. `iotuner tune --online` runs on the device under the live readers, with the metric; every
   window's MB/s is printed as a ratio to the baseline's (the acceptance asks >= 0.9).
3. The readers are captured (`iotuner capture`, 20 s) at the lab's settings; with them
   stopped, `iotuner tune --capture` tunes on the capture's reproduction (offline) from the
   lab's settings; its changes are the offline result.
4. The readers' MB/s is re-measured with the start, the online result and the offline one,
   interleaved (A, B, C, A, B, C), caches of the files dropped before each: the online result
   over the offline one is the acceptance's ratio (>= 0.95).

Everything is put back and torn down at the end. The machine is shared: the load average is
printed with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing import Process
from pathlib import Path

from tuner.lab.session import lab_session
from tuner.trials.memcap import memory_cap

FILE_MIB = 192
CHUNK = 32 * 1024  # sha256sum's read size
CACHE_BYTES = 128 << 20
QUEUE = ("read_ahead_kb", "max_sectors_kb", "nr_requests", "scheduler")


def _read_forever(paths: list[str], counter: str, join_cgroup: str) -> None:
    """One reader: hash its files from start to end, one after the other, again and again;
    its bytes in `counter`."""
    with open(join_cgroup, "w") as procs:
        procs.write(str(os.getpid()))
    total = 0
    fd = os.open(counter, os.O_WRONLY)
    for path in itertools.cycle(paths):
        digest = hashlib.sha256()
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
                total += len(chunk)
                os.pwrite(fd, f"{total:020d}".encode(), 0)  # per read: windows see every byte


def _drop_cache(files: list[list[Path]]) -> None:
    for path in itertools.chain.from_iterable(files):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _total(counters: list[Path]) -> int:
    return sum(int(p.read_text() or 0) for p in counters)


@contextlib.contextmanager
def _readers(files: list[list[Path]], counters: list[Path], procs: Path) -> Iterator[None]:
    _drop_cache(files)
    for counter in counters:  # each reader counts from 0: so does the file it writes
        counter.write_text("0" * 20)
    workers = [Process(target=_read_forever, args=([str(p) for p in f], str(c), str(procs)),
                       daemon=True) for f, c in zip(files, counters, strict=True)]  # fmt: skip
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.join()


def _windows(counters: list[Path], seconds: float, window: float) -> list[float]:
    """MB/s of the readers in each `window` over `seconds`."""
    rates = []
    end = time.monotonic() + seconds
    last, at = _total(counters), time.monotonic()
    while time.monotonic() < end:
        time.sleep(window - (time.monotonic() - at) % window)
        now, t = _total(counters), time.monotonic()
        rates.append((now - last) / (t - at) / 1e6)
        last, at = now, t
    return rates


def _set(device: str, values: dict[str, str]) -> None:
    # scheduler first (it resets nr_requests), max_sectors_kb before read_ahead_kb (6.17+
    # raises read_ahead_kb when max_sectors_kb is written), as the engine's apply order does.
    # Without a scheduler nr_requests is the tag set's depth, and a deeper one is refused.
    for name in ("scheduler", "max_sectors_kb", "nr_requests", "read_ahead_kb"):
        if name == "nr_requests" and values.get("scheduler") == "none":
            continue
        if name in values:
            Path(f"/sys/block/{device}/queue/{name}").write_text(str(values[name]))


def _queue(device: str) -> dict[str, str]:
    found = {}
    for name in QUEUE:
        text = Path(f"/sys/block/{device}/queue/{name}").read_text().strip()
        if name == "scheduler":
            text = text.split("[")[1].split("]")[0]
        found[name] = text
    return found


def _iotuner(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "tuner.cli", *args], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"iotuner {' '.join(args[:3])} failed: {done.stderr.strip()[-400:]}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=int, default=6)
    parser.add_argument("--file-mib", type=int, default=FILE_MIB,
                        help="size of each file; each reader has 192 MiB of them")  # fmt: skip
    parser.add_argument("--start-readahead", type=int, default=0)
    parser.add_argument("--online-time", type=float, default=360.0)
    parser.add_argument("--offline-time", type=float, default=150.0)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--remeasure", type=float, default=30.0)
    parser.add_argument("--app", choices=("backup", "pgbench"), default="backup")
    parser.add_argument("--mix", choices=("select", "tpcb"), default="select",
                        help="pgbench: select-only (-S) or TPC-B-like")  # fmt: skip
    parser.add_argument("--start", action="append", default=[], metavar="KEY=VALUE",
                        help="pgbench: the harmful start (else the lab's settings)")  # fmt: skip
    parser.add_argument("--probe", action="append", default=[], metavar="KEY=VALUE",
                        help="pgbench: measure each such setting against the lab's, "
                        "interleaved, and stop")  # fmt: skip
    args = parser.parse_args()
    if "IOTUNER_STATE_DIR" not in os.environ:
        os.environ["IOTUNER_STATE_DIR"] = tempfile.mkdtemp(prefix="iotuner-online-bench-")
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    with lab_session("hdd") as lab, tempfile.TemporaryDirectory() as mount_dir:
        device = Path(lab.disks[0].device).name
        found = _queue(device)
        subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{device}"], check=True)
        subprocess.run(["mount", f"/dev/{device}", mount_dir], check=True)
        try:
            if args.app == "pgbench":
                from benchmarks.online_app import run_pgbench

                run_pgbench(device, Path(mount_dir), args, found)
            else:
                run(device, Path(mount_dir), args, found)
        finally:
            _set(device, found)
            subprocess.run(["umount", mount_dir], check=False)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


def run(device: str, mount: Path, args: argparse.Namespace, found: dict[str, str]) -> None:
    """The benchmark's four steps on the mounted lab disk."""
    files: list[list[Path]] = []
    counters = []
    for i in range(args.readers):
        own = []
        for j in range(FILE_MIB // args.file_mib):
            path = mount / f"backup-{i}-{j}.bin"
            subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=1M",
                            f"count={args.file_mib}", "status=none"], check=True)  # fmt: skip
            own.append(path)
        files.append(own)
    subprocess.run(["sync"], check=True)
    for i in range(args.readers):
        counter = Path(tempfile.mkstemp(prefix=f"iotuner-online-bench-{i}-")[1])
        counter.write_text("0" * 20)
        counters.append(counter)
    metric = shlex.join([
        sys.executable, "-c",
        "import sys; print(sum(int(open(p).read() or 0) for p in sys.argv[1:]))",
        *map(str, counters),
    ])  # fmt: skip
    start = {**found, "read_ahead_kb": str(args.start_readahead)}
    _set(device, start)
    with memory_cap(CACHE_BYTES) as cap:
        with _readers(files, counters, cap.procs):
            time.sleep(5)  # the readers under way
            base = _windows(counters, 6 * args.window, args.window)
            baseline = statistics.median(base)
            print(f"start {start}: baseline {baseline:.2f} MB/s "
                  f"(windows {', '.join(f'{r:.1f}' for r in base)})")  # fmt: skip
            online_out: dict[str, object] = {}

            def tune() -> None:
                online_out.update(_online(device, args.window, args.online_time, metric))

            thread = threading.Thread(target=tune)
            began = time.monotonic()
            thread.start()
            during = []
            while thread.is_alive():
                during += _windows(counters, args.window, args.window)
            thread.join()
            ratios = [r / baseline for r in during]
            print(f"online tune: {time.monotonic() - began:.0f} s, {len(during)} windows of "
                  f"{args.window:g} s; per-window MB/s / baseline:")  # fmt: skip
            print("  " + " ".join(f"{r:.2f}" for r in ratios))
            print(f"  lowest x{min(ratios):.3f}; load average {os.getloadavg()[0]:.1f}")
            _print_online(online_out)
            Path("/tmp/iotuner-online-bench.json").write_text(json.dumps(online_out, indent=1))
        online = _queue(device)
        # The offline tune: `iotuner tune --capture` on a capture of the same readers at the
        # lab's own settings, run with the readers stopped (from read_ahead_kb 0 a built-in
        # profile's baseline trials did not reach steady state in 8 s: refused).
        _set(device, found)
        fingerprint = Path(tempfile.mkstemp(prefix="iotuner-online-bench-", suffix=".json")[1])
        with _readers(files, counters, cap.procs):
            time.sleep(5)
            _capture(device, fingerprint)
        offline_out = _offline(fingerprint, mount, args.offline_time)
        fingerprint.unlink()
        offline = _offline_settings(found, offline_out)
        print(
            f"offline tune: {offline} (x{offline_out.get('gain')} {offline_out.get('ci')} "
            "on its fio trials)"
        )
        settings = {"start": start, "online": online, "offline": offline}
        measured: dict[str, list[float]] = {name: [] for name in settings}
        for _ in range(2):
            for name, values in settings.items():
                _set(device, values)
                with _readers(files, counters, cap.procs):
                    time.sleep(3)
                    measured[name].append(statistics.fmean(
                        _windows(counters, args.remeasure, args.remeasure)))  # fmt: skip
        mean = {name: statistics.fmean(v) for name, v in measured.items()}
        for name, values in settings.items():
            print(f"  {name:8} {values}: {', '.join(f'{v:.2f}' for v in measured[name])} MB/s")
        print(f"re-measured, interleaved: online / start x{mean['online'] / mean['start']:.2f}, "
              f"offline / start x{mean['offline'] / mean['start']:.2f}, "
              f"online / offline x{mean['online'] / mean['offline']:.3f}; "
              f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    for counter in counters:
        counter.unlink()


def _capture(device: str, out: Path, seconds: float = 20.0) -> None:
    """`iotuner capture` of what `device` is asked now, its fingerprint in `out`."""
    subprocess.run([sys.executable, "-m", "tuner.cli", "capture", "--device", device,
                    "--seconds", f"{seconds:g}", "--out", str(out)], check=True,
                   capture_output=True)  # fmt: skip


def _offline(fingerprint: Path, target: Path, seconds: float) -> dict[str, object]:
    """`iotuner tune --capture` on the fingerprint's reproduction in `target` (the offline
    tune); its document, empty when it refused (said: a figure of the run, not fatal)."""
    try:
        return _iotuner("tune", "--capture", str(fingerprint), "--target", str(target),
                        "--time", f"{seconds:g}", "--json")  # fmt: skip
    except SystemExit as err:
        print(f"offline tune: {err}")
        return {}


def _online(device: str, window: float, seconds: float, metric: str) -> dict[str, object]:
    """`iotuner tune --online` on `device`, slices of `window` s for at most `seconds`, judged
    on the application's `metric` too: its --json."""
    return _iotuner("tune", "--online", "--device", device, "--slice", f"{window:g}",
                    "--time", f"{seconds:g}", "--metric", metric, "--json")  # fmt: skip


def _print_online(out: dict[str, object]) -> None:
    """The online tune's outcome: what it kept, and each candidate, a line each."""
    print(f"  kept {out['changes']} x{out['gain']} CI {out['ci']}, "
          f"{out['worse_seconds']} s on worse settings, "
          f"{len(out['tried'])} candidates, ended: {out['ended']}")  # type: ignore[arg-type]  # fmt: skip
    for t in out["tried"]:  # type: ignore[attr-defined]
        print(f"    {t['setting']}: {t['outcome']} x{t['gain']} {t['ci']} {t['why'] or ''}")


def _offline_settings(found: dict[str, str], doc: dict[str, object]) -> dict[str, str]:
    """The device's settings after the offline tune's plan: `found` with its changes."""
    return {
        **found,
        **{k.removeprefix("block."): str(v) for (k, v) in _changes(doc).items()},
    }


def _changes(doc: dict[str, object]) -> dict[str, object]:
    """The offline tune's changes ({"block.read_ahead_kb": 4096}; empty when none was chosen)."""
    changes = doc.get("changes") if doc.get("chosen") else []
    return {str(c["key"]): c["value"] for c in changes if isinstance(c, dict)} if isinstance(
        changes, list) else {}  # fmt: skip


if __name__ == "__main__":
    main()
