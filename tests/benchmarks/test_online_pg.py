"""The pgbench progress reader the online benchmark's metric and windows are made of."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.online_pg import metric_command, progress, window_rates

# Recorded from `pgbench -P 1` (TPC-B-like, the lab's hdd, 2026-11-28), with a start line and
# a line pgbench printed late (2.1 s) as it does on a busy host.
LOG = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
starting vacuum...end.
progress: 1.0 s, 43.9 tps, lat 112.141 ms stddev 92.626, 0 failed
progress: 2.1 s, 38.1 tps, lat 110.785 ms stddev 72.035, 0 failed
progress: 3.0 s, 40.0 tps, lat 100.199 ms stddev 71.608, 0 failed
progress: 4.0 s, 32.0 tps, lat 120.295 ms stddev 87.810, 0 failed
progress: 5.0 s, 33.0 tps, lat 117.312 ms stddev 88.684, 0 failed
"""


def test_progress_lines_are_read_and_other_lines_skipped(tmp_path: Path) -> None:
    log = tmp_path / "pgbench.log"
    log.write_text(LOG)
    assert progress(log) == [(1.0, 43.9), (2.1, 38.1), (3.0, 40.0), (4.0, 32.0), (5.0, 33.0)]


def test_windows_are_whole_and_the_unfinished_one_left_out(tmp_path: Path) -> None:
    log = tmp_path / "pgbench.log"
    log.write_text(LOG)
    assert window_rates(progress(log), 0.0, 2.0) == pytest.approx([43.9, (38.1 + 40.0 + 32.0) / 3])
    assert window_rates(progress(log), 0.0, 10.0) == []


def test_the_metric_counts_transactions_so_far(tmp_path: Path) -> None:
    log = tmp_path / "pgbench.log"
    log.write_text(LOG)
    done = subprocess.run(metric_command(log), shell=True, capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert float(done.stdout) == pytest.approx(43.9 + 38.1 + 40.0 + 32.0 + 33.0)
