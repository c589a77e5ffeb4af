"""PostgreSQL 15 and a pgbench that runs continuously, for the online benchmark (issue 32).

    with postgres(mount, cap) as pg:
        with pg.bench(log, select_only=True):
            ...  # progress_rates(log), the metric command metric_command(log)

postgres runs as the postgres user in the memory cgroup `cap` (so its page cache is well
short of the database), its data directory on the lab's mount, its socket in a directory of
its own and port 5438 (never 5432); it is stopped and its files removed at the end, also on
failure. pgbench prints a progress line a second (`-P 1`) to a log; its TPS per window, and
the application metric the online tune reads, both come from that log.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tuner.trials.memcap import MemoryCap

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PORT = "5438"
CLIENTS = 4
PROGRESS = re.compile(r"^progress: ([0-9.]+) s, ([0-9.]+) tps")
# The metric: transactions so far, the sum of the per-second rates pgbench printed (each over
# its one-second interval). It reads pgbench's own log: no connection into the database under
# test and no transaction of its own, unlike a psql read of pg_stat_database, and it lags the
# slice's ends by at most the second pgbench has not printed yet (as xact_commit lags by the
# second a backend waits before it flushes its statistics).
AWK = '/^progress: /{n += $4} END {printf "%.1f\\n", n}'


def metric_command(log: Path) -> str:
    """The `--metric` command (a counter): pgbench's transactions so far, read from its log."""
    return shlex.join(["awk", AWK, str(log)])


def progress(log: Path) -> list[tuple[float, float]]:
    """(seconds since pgbench started, TPS over the second before) for every progress line."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if m := PROGRESS.match(line):
            found.append((float(m.group(1)), float(m.group(2))))
    return found


def window_rates(samples: list[tuple[float, float]], since: float, window: float) -> list[float]:
    """Mean TPS in each whole `window` of pgbench's seconds after `since`."""
    rates = []
    start = since
    # A window ends on pgbench's clock; a line printed late (a busy host) falls in the next
    # one, and each line is a second's rate, so a window's TPS is the mean of its lines.
    while samples and start + window <= samples[-1][0]:
        inside = [tps for (t, tps) in samples if start < t <= start + window]
        if inside:
            rates.append(sum(inside) / len(inside))
        start += window
    return rates


def _as_postgres(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "postgres", "--", *args], capture_output=True,
                          text=True, check=True, **kw)  # type: ignore[call-overload]  # fmt: skip


@dataclass(frozen=True)
class Postgres:
    """A running server: its socket directory and the cgroup pgbench joins too."""

    sock: Path
    cap: MemoryCap

    @property
    def conn(self) -> list[str]:
        """libpq's connection options for psql and pgbench."""
        return ["-h", str(self.sock), "-p", PORT]

    @contextlib.contextmanager
    def bench(self, log: Path, select_only: bool, seconds: int = 7200) -> Iterator[None]:
        """pgbench running (CLIENTS clients) until the block ends, its progress in `log`."""
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

    def checkpoint(self) -> None:
        """A checkpoint, so each measurement starts without the last one's dirty pages."""
        _as_postgres("psql", *self.conn, "-qc", "CHECKPOINT", "postgres")


@contextlib.contextmanager
def postgres(mount: Path, cap: MemoryCap, scale: int) -> Iterator[Postgres]:
    """initdb on `mount`, the server started in `cap`, pgbench's tables at `scale`; stopped and
    removed at the end."""
    data, sock = mount / "pgdata", Path(tempfile.mkdtemp(prefix="iotuner-online-pg-"))
    # The lab's directories are root's alone (0700): postgres may pass through to its data.
    for above in [mount, *mount.parents]:
        if str(above) in ("/", "/run"):
            break
        above.chmod(above.stat().st_mode | 0o001)
    entry = pwd.getpwnam("postgres")
    data.mkdir()
    for path in (data, sock):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    pg_ctl = ["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(data)]
    try:
        _as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "--no-sync")
        opts = (
            f"-k {sock} -p {PORT} -c listen_addresses='' -c shared_buffers=16MB "
            "-c max_wal_size=256MB"
        )  # a 2 GiB lab disk: WAL recycled, not grown
        subprocess.run([*pg_ctl, "-o", opts, "-l", str(sock / "pg.log"), "-w", "start"],
                       check=True, capture_output=True, preexec_fn=cap.joiner())  # fmt: skip
        try:
            server = Postgres(sock, cap)
            _as_postgres("pgbench", *server.conn, "-i", "-s", str(scale), "-q", "postgres")
            server.checkpoint()
            yield server
        finally:
            subprocess.run([*pg_ctl, "-m", "fast", "-w", "stop"], capture_output=True)
    finally:
        subprocess.run(["rm", "-rf", str(data), str(sock)], check=False)
