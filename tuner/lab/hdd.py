"""The modelled hard disk's parameters: their allow-list and bounds, and the model's formulas.

The model itself runs in `hdd_model.h` (served by the nbdkit plugin `hdd.c`, and by `raid.c` for
a RAID set's members; its header comment gives every formula).
This module holds what a spec may ask for (`modelled.py` reads the `model:` map and builds the
plugin's parameters) and computes what the model predicts, so tests and docs can hold the
served disk against its formula:

    T            = 60 / rpm                                  one rotation
    rate(z)      = outer - (outer - inner) * z / (zones - 1)  zone z's media rate (z = 0 outer)
    track(z)     = rate(z) * T                               bytes per track in zone z
    seek(d)      = track_ms + (full_ms - track_ms) * sqrt((d - 1) / (C - 1)),  seek(0) = 0
    random read  = overhead + E[seek] + T / 2 + block / E[rate]   (depth 1, uniform offsets)
    half power   = (overhead + E[seek] + T / 2) * E[rate]   the random read size whose
                   throughput is half the media rate (positioning time = transfer time)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tuner.lab.faults import NO_FAULTS, Faults


@dataclass(frozen=True)
class HddModel:
    """A hard disk's mechanics; the defaults are a 7200 rpm 3.5" desktop drive."""

    kind: str = "hdd"
    rpm: int = 7200
    outer_mbps: float = 200.0
    inner_mbps: float = 100.0
    zones: int = 16
    seek_track_ms: float = 1.0
    seek_full_ms: float = 16.0
    overhead_ms: float = 0.2
    cache_kib: int = 4096
    queue_depth: int = 32
    seed: int = 1
    faults: Faults = NO_FAULTS

    @property
    def rotation_s(self) -> float:
        """One turn of the platter, in seconds."""
        return 60.0 / self.rpm


# name -> (integer only, lowest, highest); inner_mbps and seek_full_ms are also held against
# outer_mbps and seek_track_ms below. queue_depth stops at 32, SATA NCQ's depth.
BOUNDS: dict[str, tuple[bool, float, float]] = {
    "rpm": (True, 3600, 15000),
    "outer_mbps": (False, 10, 1000),
    "inner_mbps": (False, 5, 1000),
    "zones": (True, 1, 64),
    "seek_track_ms": (False, 0.1, 10),
    "seek_full_ms": (False, 0.1, 40),
    "overhead_ms": (False, 0, 5),
    "cache_kib": (True, 0, 262144),
    "queue_depth": (True, 1, 32),
    "seed": (True, 0, 2**31 - 1),
}


def check_model(model: HddModel, fail: Callable[[str], Exception]) -> None:
    """What the bounds alone do not catch: an inner zone faster than the outer, and so on."""
    if model.inner_mbps > model.outer_mbps:
        raise fail(
            f"model: inner_mbps {model.inner_mbps:g} is above outer_mbps {model.outer_mbps:g} "
            "(the outer zone is the fast one)"
        )
    if model.seek_full_ms < model.seek_track_ms:
        raise fail(
            f"model: seek_full_ms {model.seek_full_ms:g} is below seek_track_ms "
            f"{model.seek_track_ms:g}"
        )


@dataclass(frozen=True)
class Geometry:
    """Zones as the plugin lays them out: rates (bytes/s), bytes per track, tracks per zone."""

    rates: tuple[float, ...]
    track_bytes: tuple[float, ...]
    tracks_per_zone: int
    size_bytes: int

    @property
    def tracks(self) -> int:
        """Tracks across the whole stroke."""
        return self.tracks_per_zone * len(self.rates)

    def zone_bytes(self, zone: int) -> float:
        """Bytes zone `zone` holds (the last one may be cut short by the size)."""
        start = sum(t * self.tracks_per_zone for t in self.track_bytes[:zone])
        full = self.track_bytes[zone] * self.tracks_per_zone
        return max(0.0, min(full, self.size_bytes - start))


def geometry(model: HddModel, size_bytes: int) -> Geometry:
    """The zone layout `hdd_model.h` computes for a disk of `size_bytes`."""
    zones, drop = model.zones, model.outer_mbps - model.inner_mbps
    steps = [z / (zones - 1) if zones > 1 else 0.0 for z in range(zones)]
    rates = tuple((model.outer_mbps - drop * step) * 1e6 for step in steps)
    track_bytes = tuple(r * model.rotation_s for r in rates)
    return Geometry(rates, track_bytes, int(size_bytes / sum(track_bytes)) + 1, size_bytes)


def seek_s(model: HddModel, distance: float, tracks: int) -> float:
    """Seek time over `distance` tracks (0: none) of `tracks` in all."""
    if distance <= 0:
        return 0.0
    span = (distance - 1) / (tracks - 1) if tracks > 1 else 0.0
    track, full = model.seek_track_ms, model.seek_full_ms
    return (track + (full - track) * math.sqrt(span)) / 1e3


def track_quantiles(model: HddModel, size_bytes: int, steps: int = 400) -> list[float]:
    """The track (a continuous coordinate) at `steps` evenly spaced byte quantiles: where
    uniformly drawn offsets land (outer zones hold more bytes per track)."""
    geo = geometry(model, size_bytes)
    positions = []
    for i in range(steps):
        offset = (i + 0.5) * size_bytes / steps
        zone, start = 0, 0.0
        while zone < len(geo.rates) - 1 and offset >= start + geo.zone_bytes(zone):
            start += geo.zone_bytes(zone)
            zone += 1
        positions.append(zone * geo.tracks_per_zone + (offset - start) / geo.track_bytes[zone])
    return positions


def mean_random_seek_s(model: HddModel, size_bytes: int, steps: int = 400) -> float:
    """E[seek] between two offsets drawn uniformly over the disk's bytes (midpoint rule)."""
    tracks = geometry(model, size_bytes).tracks
    positions = track_quantiles(model, size_bytes, steps)
    total = sum(seek_s(model, abs(a - b), tracks) for a in positions for b in positions)
    return total / steps**2


def mean_rate(model: HddModel, size_bytes: int) -> float:
    """The media rate (bytes/s) averaged over the disk's bytes."""
    geo = geometry(model, size_bytes)
    return sum(geo.zone_bytes(z) * r for z, r in enumerate(geo.rates)) / size_bytes


def positioning_s(model: HddModel, size_bytes: int) -> float:
    """A random read's mean time before its transfer: overhead + E[seek] + half a turn."""
    seek = mean_random_seek_s(model, size_bytes)
    return model.overhead_ms / 1e3 + seek + model.rotation_s / 2


def random_read_s(model: HddModel, size_bytes: int, block: int) -> float:
    """The model's mean service time of a random `block`-byte read at depth 1."""
    return positioning_s(model, size_bytes) + block / mean_rate(model, size_bytes)


def random_read_mbps(model: HddModel, size_bytes: int, block: int) -> float:
    """MB/s of random `block`-byte reads at depth 1 over the whole disk."""
    return block / random_read_s(model, size_bytes, block) / 1e6


def half_power_bytes(model: HddModel, size_bytes: int) -> float:
    """The random read size at which depth 1 gets half the media rate (the papers' half-power
    point): positioning time and transfer time equal."""
    return positioning_s(model, size_bytes) * mean_rate(model, size_bytes)


def zone_rate_mbps(model: HddModel, size_bytes: int, offset: int) -> float:
    """The media rate (MB/s) at byte `offset`."""
    geo = geometry(model, size_bytes)
    start = 0.0
    for zone in range(len(geo.rates)):
        start += geo.zone_bytes(zone)
        if offset < start:
            return geo.rates[zone] / 1e6
    return geo.rates[-1] / 1e6


def stream_mbps(model: HddModel, size_bytes: int, offset: int, length: int) -> float:
    """The media rate (MB/s) of one sequential pass over [offset, offset + length): the bytes
    over the time each zone takes to pass under the head."""
    geo = geometry(model, size_bytes)
    seconds, start = 0.0, 0.0
    for zone, rate in enumerate(geo.rates):
        end = start + geo.zone_bytes(zone)
        seconds += max(0.0, min(end, offset + length) - max(start, offset)) / rate
        start = end
    return length / seconds / 1e6
