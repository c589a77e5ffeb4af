"""The papers' curves on the modelled hard disk (`hdd`), each held to the model's formula within
a stated tolerance (figures and parameters in docs/lab.md, "The papers' curves").

Random 4 KiB reads at depth 1 against 1 / (overhead + E[seek] + T/2), and their rise with the
queue depth, are in tests/lab/test_hdd.py; the outer against inner zone rate too. RAID-5 small
writes against full-stripe writes are in tests/lab/test_raid.py, three disks on one bus in
tests/lab/test_bus.py.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.lab.fio import fio_job, fio_jobs
from tuner.lab import lab_up, load_spec, parse_spec
from tuner.lab.hdd import HddModel, half_power_bytes, mean_rate, random_read_mbps, stream_mbps

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


def _half_power(sizes: Sequence[float], mbps: Sequence[float], half: float) -> float:
    """The request size where the measured curve crosses `half`, interpolated in log(size)."""
    points = list(zip(sizes, mbps, strict=True))
    for (s0, m0), (s1, m1) in itertools.pairwise(points):
        if m0 < half <= m1:
            share = (half - m0) / (m1 - m0)
            return math.exp(math.log(s0) + share * (math.log(s1) - math.log(s0)))
    raise AssertionError(f"the curve {points} does not cross {half:.1f} MB/s")


def test_throughput_against_request_size_and_the_half_power_point(state: Path) -> None:
    disk = lab_up(parse_spec(FAST_HDD, "fast-hdd", "fast-hdd")).disks[0]
    model = disk.model
    assert isinstance(model, HddModel)
    sizes = [k * KIB for k in SIZES_KIB]
    curves = {
        depth: [
            fio_job(disk.device, "randread", f"{k}k", depth, 2, ramp=0.5)["bw_bytes"] / 1e6
            for k in SIZES_KIB
        ]
        for depth in (1, 4)
    }
    formula = [random_read_mbps(model, disk.size_bytes, s) for s in sizes]
    half = mean_rate(model, disk.size_bytes) / 2e6  # 31.3 MB/s
    expected = half_power_bytes(model, disk.size_bytes)  # 341 KiB: 5.59 ms x 62.5 MB/s
    measured = _half_power(sizes, curves[1], half)
    for depth, mbps in curves.items():
        print(f"random reads at depth {depth}, {SIZES_KIB} KiB: "
              + ", ".join(f"{m:.1f}" for m in mbps) + " MB/s")  # fmt: skip
    print("formula at depth 1: " + ", ".join(f"{m:.1f}" for m in formula) + " MB/s; half "
          f"power {measured / KIB:.0f} KiB measured, {expected / KIB:.0f} KiB formula")  # fmt: skip
    # Depth 1: below the formula by the route's own time (loop, FUSE, nbdfuse, the socket and
    # their copies: about 0.6 ms a command plus 1.6 ms a MiB here, which the model does not
    # see): measured 0.84-0.92 of it at every size over three runs (load average up to 7);
    # 20 % allowed. The route's time per byte shows as a slower transfer, so the half-power
    # point lies above the formula's: measured 1.23-1.27 x; up to 1.45 x allowed, and never
    # below it.
    for mbps, want in zip(curves[1], formula, strict=True):
        assert mbps == pytest.approx(want, rel=0.2)
    assert expected <= measured < 1.45 * expected
    # Four commands at the drive shorten its positioning (shortest first): small requests
    # gain most; large ones are transfer-bound and gain little but lose nothing.
    assert curves[4][0] > 1.2 * curves[1][0]
    for deep, shallow in zip(curves[4], curves[1], strict=True):
        assert deep > 0.95 * shallow
    assert _half_power(sizes, curves[4], half) < measured


def test_sequential_streams_lose_to_seeks_unless_readahead_is_large(state: Path) -> None:
    disk = lab_up(load_spec("hdd")).disks[0]
    model = disk.model
    assert isinstance(model, HddModel)
    media = stream_mbps(model, disk.size_bytes, 0, disk.size_bytes)  # 150.4 over the disk
    region = disk.size_bytes // 4
    # Four buffered readers, 16 KiB at a time, each in its own quarter of the disk: what
    # reaches the drive is the kernel's readahead, one stream's window after another's.
    jobs = [[f"--filename={disk.device}", f"--offset={i * region}"] for i in range(4)]
    got = {}
    for read_ahead_kb in (128, 4096):
        Path(f"/sys/block/{Path(disk.device).name}/queue/read_ahead_kb").write_text(
            str(read_ahead_kb)
        )
        read = fio_jobs(jobs, 5, "--rw=read", "--bs=16k", "--ioengine=psync", "--direct=0",
                        f"--size={region}", "--invalidate=1")  # fmt: skip
        got[read_ahead_kb] = read["bw_bytes"] / 1e6
    # The floor: every window costs a seek between quarters and half a turn.
    seek = model.seek_track_ms + (model.seek_full_ms - model.seek_track_ms) * math.sqrt(0.25)
    positioning = (model.overhead_ms + seek) / 1e3 + model.rotation_s / 2
    floor = {kb: kb * KIB / (positioning + kb * KIB / (media * 1e6)) / 1e6 for kb in (128, 4096)}
    print(f"4 streams, read_ahead_kb 128: {got[128]:.1f} MB/s, 4096: {got[4096]:.1f} MB/s "
          f"(media {media:.1f}; one window per seek: "
          f"{floor[128]:.1f}, {floor[4096]:.1f})")  # fmt: skip
    # 128 KiB windows: half or more of the media rate goes to seeks (measured 0.36-0.40 of it
    # here, 0.456 in CI; above one window per seek because a stream's next window is often
    # queued already when its last one ends, and shortest-positioning-first serves it with no
    # seek).
    assert floor[128] * 0.9 < got[128] < 0.55 * media
    # 4 MiB windows amortise the seeks (measured 0.63-0.74 of the media rate; x 1.56-2.07 the
    # 128 KiB figure over the runs so far, x 1.36 once in a whole-suite run over 3 s, hence
    # the 5 s now and the 1.25).
    assert got[4096] > 0.6 * media and got[4096] > 1.25 * got[128]
    assert got[4096] > 0.9 * floor[4096]
