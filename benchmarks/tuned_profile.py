"""TuneD's throughput-performance profile, as far as the benchmarks' settings go.

From profiles/throughput-performance/tuned.conf in redhat-performance/tuned (2bfa442, 2026):
`[disk] readahead=>4096` (at least 4096 KB on every disk), and `[vm] dirty_bytes = 40%`,
`dirty_background_bytes = 10%`, which its vm plugin writes as vm.dirty_ratio 40 and
vm.dirty_background_ratio 10. No scheduler, queue depth or request size for disks; its CPU
governor, swappiness and other settings are outside what the benchmarks compare. The tune
benchmark applies it through the engine (tune_row.tuned_settings), the claims benchmark by
an iotuner plan it applies and rolls back (claims.tuned_profile): one profile, two ways of
setting it.
"""

from __future__ import annotations

READAHEAD_KB = 4096
"""The least readahead TuneD leaves on a disk."""
DIRTY_RATIOS = {"dirty_ratio": 40, "dirty_background_ratio": 10}
"""TuneD's writeback thresholds, by name under /proc/sys/vm."""
DIRTY_SYSCTLS = ("dirty_ratio", "dirty_background_ratio", "dirty_bytes", "dirty_background_bytes")
"""Every writeback threshold: a ratio written zeroes its bytes twin and the other way round,
so saving and restoring takes all four."""
