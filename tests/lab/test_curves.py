"""The papers' curves on the modelled hard disk (`hdd`): their orderings and ratios, measured
side by side in each test (figures and parameters in docs/lab.md, "The papers' curves"; the
figures against the model's formulas, which need a quiet machine, are rows 5 and 6 of
benchmarks/hdd_model.py).

Random 4 KiB reads at depth 1 against 1 / (overhead + E[seek] + T/2), and their rise with the
queue depth, are in tests/lab/test_hdd.py; the outer against inner zone rate too. RAID-5 small
writes against full-stripe writes are in tests/lab/test_raid.py, three disks on one bus in
tests/lab/test_bus.py.

Spreads (10 runs one after another, 2026-11-28 12:34-13:02 UTC, on the 2-core VM shared by 7
engineers: load average 0.5-22, harsher than the suite's serial phase), min / median / max:
- depth 4 over depth 1 at 32 KiB: 1.255 / 1.315 / 1.625; at 512 KiB: 1.032 / 1.207 / 1.284
  (the smallest gain at any size: 1.032). The gain at 512 KiB came out above the one at 32 KiB
  once (1.284 against 1.277, load 22): that ordering is not held.
- depth 1, each size over the one before: 32 to 128 KiB 2.801 / 3.159 / 3.703, 128 to 256
  1.490 / 1.589 / 1.752, 256 to 512 1.309 / 1.387 / 1.461 (formula 3.2, 1.6, 1.4).
- four streams, 4 MiB readahead over 128 KiB: 1.585 / 1.909 / 2.427; 128 KiB's share of the
  media rate 0.307 / 0.364 / 0.439.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from tests.lab.fio import fio_job, fio_jobs
from tuner.lab import lab_up, load_spec, parse_spec
from tuner.lab.hdd import HddModel, stream_mbps

pytestmark = pytest.mark.lab

KIB, MIB = 1 << 10, 1 << 20
SIZES_KIB = (32, 128, 256, 512)
# A 15,000 rpm drive, its media slowed to 80-40 MB/s, so that its half-power point (341 KiB)
# lies below 512 KiB: a larger request reaches the model as 512 KiB pieces (FUSE's largest),
# which nbdfuse's threads may hand the drive out of order, each costing a turn (docs/lab.md).
FAST_HDD = (
    "disks: [{name: d0, size: 1GiB, model: {kind: hdd, rpm: 15000, outer_mbps: 80,"
    " inner_mbps: 40, seek_track_ms: 0.5, seek_full_ms: 6}}]"
)


def test_throughput_against_request_size_and_the_queue_depth(state: Path) -> None:
    """Random reads rise with the request size, and four commands at the drive help small
    requests most: orderings and ratios of figures measured in this test, depths 1 and 4
    interleaved size by size (a burst of other work lands on both). The curve against the
    model's formula and its half-power point need a quiet machine: benchmarks/hdd_model.py's
    request-size rows."""
    disk = lab_up(parse_spec(FAST_HDD, "fast-hdd", "fast-hdd")).disks[0]
    curves: dict[int, list[float]] = {1: [], 4: []}
    for k in SIZES_KIB:
        for depth in (1, 4):
            read = fio_job(disk.device, "randread", f"{k}k", depth, 2, ramp=0.5)
            curves[depth].append(read["bw_bytes"] / 1e6)
    gains = [deep / shallow for deep, shallow in zip(curves[4], curves[1], strict=True)]
    rises = [b / a for a, b in itertools.pairwise(curves[1])]
    for depth, mbps in curves.items():
        print(f"random reads at depth {depth}, {SIZES_KIB} KiB: "
              + ", ".join(f"{m:.1f}" for m in mbps) + " MB/s")  # fmt: skip
    print("SPREAD curves-depth: gain " + " ".join(f"{g:.3f}" for g in gains)
          + " rise " + " ".join(f"{r:.3f}" for r in rises))  # fmt: skip
    # The formula's depth-1 curve rises x 3.2, 1.6, 1.4 from size to size (5.4, 17.1, 26.8,
    # 37.5 MB/s): positioning, fixed per request, is shared by more bytes. The smallest rise
    # measured was 1.309 (module docstring): 1.15 leaves 12 % for noise.
    assert min(rises) > 1.15, rises
    # Four commands at the drive shorten its positioning (shortest first): small requests gain
    # (at least 1.255 measured: 1.15 allowed); large ones are transfer-bound and gain little
    # but lose nothing (at least 1.032 measured: 0.9 allowed).
    assert gains[0] > 1.15, gains
    assert min(gains) > 0.9, gains


def test_sequential_streams_lose_to_seeks_unless_readahead_is_large(state: Path) -> None:
    disk = lab_up(load_spec("hdd")).disks[0]
    model = disk.model
    assert isinstance(model, HddModel)
    media = stream_mbps(model, disk.size_bytes, 0, disk.size_bytes)  # 150.4 over the disk
    region = disk.size_bytes // 4
    # Four buffered readers, 16 KiB at a time, each in its own quarter of the disk: what
    # reaches the drive is the kernel's readahead, one stream's window after another's.
    jobs = [[f"--filename={disk.device}", f"--offset={i * region}"] for i in range(4)]
    runs: dict[int, list[float]] = {128: [], 4096: []}
    # Interleaved, 128, 4096, 128, 4096, the faster run of each kept: a burst of other work on
    # the two cores only slows a modelled disk, never speeds it past its model.
    for read_ahead_kb in (128, 4096, 128, 4096):
        Path(f"/sys/block/{Path(disk.device).name}/queue/read_ahead_kb").write_text(
            str(read_ahead_kb)
        )
        read = fio_jobs(jobs, 4, "--rw=read", "--bs=16k", "--ioengine=psync", "--direct=0",
                        f"--size={region}", "--invalidate=1")  # fmt: skip
        runs[read_ahead_kb].append(read["bw_bytes"] / 1e6)
    got = {kb: max(mbps) for kb, mbps in runs.items()}
    # The floor: every window costs a seek between quarters and half a turn.
    seek = model.seek_track_ms + (model.seek_full_ms - model.seek_track_ms) * math.sqrt(0.25)
    positioning = (model.overhead_ms + seek) / 1e3 + model.rotation_s / 2
    floor = {kb: kb * KIB / (positioning + kb * KIB / (media * 1e6)) / 1e6 for kb in (128, 4096)}
    print(f"4 streams, read_ahead_kb 128: {got[128]:.1f} MB/s, 4096: {got[4096]:.1f} MB/s "
          f"(media {media:.1f}; one window per seek: "
          f"{floor[128]:.1f}, {floor[4096]:.1f}); runs {runs}")  # fmt: skip
    print(
        f"SPREAD curves-readahead: ratio {got[4096] / got[128]:.3f} "
        f"share128 {got[128] / media:.3f} share4096 {got[4096] / media:.3f}"
    )
    # 128 KiB windows: half or more of the media rate goes to seeks. Other work only slows the
    # disk, so this bound cannot go red on load (measured at most 0.439 of the media rate, 0.456
    # once in CI; the figures against the model are benchmarks/hdd_model.py's row 5).
    assert got[128] < 0.55 * media
    # 4 MiB windows amortise the seeks: the ratio of the two, measured side by side here (at
    # least 1.585 measured over 10 runs, module docstring; 1.25 allowed).
    assert got[4096] > 1.25 * got[128]
