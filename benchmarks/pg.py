"""PostgreSQL 15 for the benchmarks: a cluster of their own on a lab's mount.

    cluster = Cluster(mount, cap, port="5436")
    try:
        cluster.init(scale=20)       # initdb, started in `cap`, pgbench's tables, a checkpoint
        out = cluster.pgbench("-S", seconds=30)
    finally:
        cluster.remove()             # stopped (also half-started) and its files removed

The server runs as the postgres user inside the memory cgroup `cap` (so its page cache is the
share the benchmark gives it), its data directory on the lab's mount, its socket in a
directory of its own and a port of the caller's (never 5432: the system cluster's). Used by
the capture benchmark (benchmarks/capture.py), the captured applications' tune
(benchmarks/capture_tune.py) and the online benchmark (benchmarks/online_pg.py), each on its
own port so two of them never meet.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tuner.trials.memcap import MemoryCap

PG_BIN = Path("/usr/lib/postgresql/15/bin")
CLIENTS = 4
"""pgbench's clients (-c), on two threads (-j 2)."""


def as_postgres(*args: str, timeout: float = 900) -> str:
    """`args` run as the postgres user: its standard output; RuntimeError with its stderr when
    it fails."""
    done = subprocess.run(["runuser", "-u", "postgres", "--", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def reachable(mount: Path) -> None:
    """The lab's directories are root's alone (0700): postgres may pass through to its data."""
    for above in [mount, *mount.parents]:
        if str(above) in ("/", "/run", "/tmp", "/var/tmp"):
            break
        above.chmod(above.stat().st_mode | 0o001)


class Cluster:
    """A cluster on `mount` listening on `port` (its unix socket only); `settings` are more
    server options (`-c name=value ...`)."""

    def __init__(self, mount: Path, cap: MemoryCap, port: str, settings: str = "") -> None:
        self.mount = mount
        self.data = mount / "pgdata"
        self.sock = Path(tempfile.mkdtemp(prefix="iotuner-pg-"))
        self.cap = cap
        self.port = port
        self.settings = settings
        self.conn = ["-h", str(self.sock), "-p", port]
        """libpq's connection options for psql and pgbench."""
        self.running = False

    def _pg_ctl(self, *args: str) -> None:
        command = ["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D",
                   str(self.data), *args]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, timeout=300,
                       preexec_fn=self.cap.joiner())  # fmt: skip

    def init(self, scale: int) -> None:
        """initdb, the server started, pgbench's tables at `scale` written out (CHECKPOINT)."""
        reachable(self.mount)
        self.data.mkdir()
        entry = pwd.getpwnam("postgres")
        for path in (self.data, self.sock):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "--no-sync")
        self.start()
        as_postgres("pgbench", *self.conn, "-i", "-s", str(scale), "-q", "postgres")
        self.checkpoint()

    def start(self) -> None:
        """Start the server inside the memory cgroup (its every process charged there)."""
        opts = f"-k {self.sock} -p {self.port} -c listen_addresses='' -c shared_buffers=16MB"
        if self.settings:
            opts = f"{opts} {self.settings}"
        self._pg_ctl("-o", opts, "-l", str(self.sock / "pg.log"), "-w", "start")
        self.running = True

    def stop(self) -> None:
        """A fast shutdown: its checkpoint writes what the last run dirtied."""
        if self.running:
            self._pg_ctl("-m", "fast", "-w", "stop")
            self.running = False

    def checkpoint(self) -> None:
        """A checkpoint, so the next measurement starts without the last one's dirty pages."""
        as_postgres("psql", *self.conn, "-qc", "CHECKPOINT", "postgres")

    def pgbench(self, *options: str, seconds: float) -> str:
        """pgbench's output after `seconds` of its transactions (`options`: -S for
        select-only, nothing for TPC-B-like), CLIENTS clients."""
        return as_postgres("pgbench", *self.conn, *options, "-c", str(CLIENTS), "-j", "2",
                           "-T", str(int(seconds)), "postgres")  # fmt: skip

    @contextlib.contextmanager
    def bench(self, log: Path, select_only: bool, seconds: int = 7200) -> Iterator[None]:
        """pgbench running in the cgroup until the block ends, a progress line a second in
        `log`."""
        with open(log, "w") as out:
            child = subprocess.Popen(
                ["runuser", "-u", "postgres", "--", "pgbench", *self.conn, "-c", str(CLIENTS),
                 "-j", "2", "-P", "1", "-T", str(seconds), *(["-S"] if select_only else []),
                 "postgres"],
                stdout=out, stderr=out, preexec_fn=self.cap.joiner())  # fmt: skip
        try:
            yield
        finally:
            # runuser passes SIGTERM on to pgbench, whose clients end with it.
            child.terminate()
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def remove(self) -> None:
        """Stop the server (also when a start half happened) and remove its files."""
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D",
                        str(self.data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, check=False, timeout=120)  # fmt: skip
        self.running = False
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.rmtree(self.sock, ignore_errors=True)


@contextlib.contextmanager
def cluster(mount: Path, cap: MemoryCap, port: str, scale: int,
            settings: str = "") -> Iterator[Cluster]:  # fmt: skip
    """A running cluster with pgbench's tables at `scale`; removed at the end, also on
    failure."""
    found = Cluster(mount, cap, port, settings)
    try:
        found.init(scale)
        yield found
    finally:
        found.remove()
