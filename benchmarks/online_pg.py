"""A pgbench that runs continuously, read for the online benchmark (issue 32).

    with cluster(mount, cap, PORT, scale, SETTINGS) as pg:     # benchmarks/pg.py
        with pg.bench(log, select_only=True):
            ...  # window_rates(progress(log), ...), the metric command metric_command(log)

The cluster is benchmarks/pg.py's, on port 5438. pgbench prints a progress line a second
(`-P 1`) to a log; its TPS per window, and the application metric the online tune reads, both
come from that log.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PORT = "5438"
SETTINGS = "-c max_wal_size=256MB"
"""A 2 GiB lab disk: WAL recycled, not grown."""
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
