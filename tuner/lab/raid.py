"""The modelled hardware RAID set's parameters, its formulas, and its member-command counts.

The set itself runs in `raid.c` (an nbdkit plugin over `members` drives of `hdd_model.h`; its
header comment gives the layout and what each request costs). It is one block device, as a
RAID controller shows the kernel: the members are not block devices of their own.

    unit U           = stripe_kib KiB, the bytes one member holds of one stripe
    full stripe      = D U bytes, D = members (raid0) or members - 1 (raid5)
    raid5 small write (inside one unit): read old data, read old parity, write both: 4 member
                     commands, and the writes wait about one turn for the sectors just read
    raid5 full-stripe write: members writes, no reads
    raid5 small write at depth 1 ~ E[max(R1, R2)] + T: the later of two random reads on two
                     members (R = overhead + seek + rotational wait + transfer), then a turn
                     until the sector just read is under the head again, and its write
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from tuner.lab.faults import NO_FAULTS, Faults
from tuner.lab.hdd import HddModel, geometry, mean_rate, seek_s, track_quantiles
from tuner.lab.hdd import random_read_s as hdd_random_read_s

KINDS = ("raid0", "raid5")
MAX_MEMBERS = 16
STATS_SUFFIX = ".stats"
# name -> (integer only, lowest, highest); members also needs 3 for raid5 (below).
BOUNDS: dict[str, tuple[bool, float, float]] = {
    "members": (True, 2, MAX_MEMBERS),
    "stripe_kib": (True, 4, 4096),
}
MIN_MEMBERS = {"raid0": 2, "raid5": 3}


@dataclass(frozen=True)
class RaidModel:
    """A hardware RAID set of identical modelled hard disks; raid5 rotates its parity."""

    kind: str = "raid5"
    members: int = 4
    stripe_kib: int = 64
    member: HddModel = field(default_factory=HddModel)
    faults: Faults = NO_FAULTS

    @property
    def level(self) -> int:
        """0 or 5."""
        return int(self.kind.removeprefix("raid"))

    @property
    def data_members(self) -> int:
        """Data units per stripe."""
        return self.members - 1 if self.kind == "raid5" else self.members

    @property
    def full_stripe_bytes(self) -> int:
        """The bytes of one whole stripe's data: a write of this size, aligned, needs no read."""
        return self.data_members * self.stripe_kib * 1024

    def member_bytes(self, size_bytes: int) -> int:
        """Each member's size for an array of `size_bytes` of data."""
        unit = self.stripe_kib * 1024
        return -(-size_bytes // self.full_stripe_bytes) * unit


def random_read_s(model: RaidModel, size_bytes: int, block: int) -> float:
    """A random `block`-byte read inside one unit at depth 1: one member's random read."""
    return hdd_random_read_s(model.member, model.member_bytes(size_bytes), block)


def small_write_s(model: RaidModel, size_bytes: int, block: int, samples: int = 20000) -> float:
    """A raid5 write of `block` bytes inside one unit at depth 1: E[max(R1, R2)] + T, the
    expectation taken over `samples` draws (seeded: the same figure every time)."""
    drive, member = model.member, model.member_bytes(size_bytes)
    tracks = geometry(drive, member).tracks
    positions = track_quantiles(drive, member)
    transfer = block / mean_rate(drive, member)
    draw = random.Random(1)

    def one_read() -> float:
        seek = seek_s(drive, abs(draw.choice(positions) - draw.choice(positions)), tracks)
        return drive.overhead_ms / 1e3 + seek + draw.random() * drive.rotation_s + transfer

    later = sum(max(one_read(), one_read()) for _ in range(samples)) / samples
    return later + drive.rotation_s


def member_commands(model: RaidModel, offset: int, length: int, write: bool) -> tuple[int, int]:
    """(reads, writes) of member commands one request costs, as `raid.c` plans it (pieces
    contiguous on a member merged): the count the tests hold the served set's stats against."""
    unit, dps = model.stripe_kib * 1024, model.full_stripe_bytes
    n = model.members
    reads: list[list[int]] = []
    writes: list[list[int]] = []

    def add(plan: list[list[int]], member: int, off: int, size: int) -> None:
        for piece in reversed(plan):
            if piece[0] == member:
                if piece[1] + piece[2] == off:
                    piece[2] += size
                    return
                break
        plan.append([member, off, size])

    end, stripe = offset + length, offset // dps
    while stripe * dps < end:
        a, b = max(offset, stripe * dps), min(end, (stripe + 1) * dps)
        parity = (n - 1) - stripe % n if model.kind == "raid5" else -1
        whole = a == stripe * dps and b == (stripe + 1) * dps
        lo, hi = unit, 0
        j = (a - stripe * dps) // unit
        while j * unit + stripe * dps < b:
            ua = max(a, stripe * dps + j * unit)
            ub = min(b, stripe * dps + (j + 1) * unit)
            member = (parity + 1 + j) % n if model.kind == "raid5" else j
            within = ua - (stripe * dps + j * unit)
            if not write or (model.kind == "raid5" and not whole):
                add(reads, member, stripe * unit + within, ub - ua)
            if write:
                add(writes, member, stripe * unit + within, ub - ua)
            lo, hi = min(lo, within), max(hi, within + ub - ua)
            j += 1
        if write and model.kind == "raid5":
            if not whole:
                add(reads, parity, stripe * unit + lo, hi - lo)
            add(writes, parity, stripe * unit + lo, hi - lo)
        stripe += 1
    return len(reads), len(writes)


@dataclass(frozen=True)
class RaidStats:
    """What `raid.c` counted since its server started (its stats file)."""

    read_requests: int
    write_requests: int
    whole_stripes: int  # stripes written whole: no reads
    rmw_stripes: int  # stripes read-modify-written
    member_reads: tuple[int, ...]
    member_writes: tuple[int, ...]

    def __sub__(self, before: RaidStats) -> RaidStats:
        """The counts between two readings."""
        return RaidStats(
            self.read_requests - before.read_requests,
            self.write_requests - before.write_requests,
            self.whole_stripes - before.whole_stripes,
            self.rmw_stripes - before.rmw_stripes,
            tuple(a - b for a, b in zip(self.member_reads, before.member_reads, strict=True)),
            tuple(a - b for a, b in zip(self.member_writes, before.member_writes, strict=True)),
        )

    @property
    def member_commands(self) -> int:
        """Member reads and writes together."""
        return sum(self.member_reads) + sum(self.member_writes)


def stats_path(data_file: str | Path) -> Path:
    """Where the plugin serving `data_file` keeps its counts (beside it, on /dev/shm)."""
    return Path(data_file).with_suffix(STATS_SUFFIX)


def read_stats(path: Path) -> RaidStats:
    """Parse the plugin's stats file (layout in `raid.c`'s header comment)."""
    raw = path.read_bytes()
    words = struct.unpack(f"<{len(raw) // 8}Q", raw[: len(raw) // 8 * 8])
    members = int(words[0])
    if not 0 < members <= MAX_MEMBERS or len(words) < 8 + 4 * members:
        raise ValueError(f"{path}: not a RAID stats file")
    per = [words[8 + 4 * m : 12 + 4 * m] for m in range(members)]
    return RaidStats(
        int(words[1]), int(words[2]), int(words[3]), int(words[4]),
        tuple(int(p[0]) for p in per), tuple(int(p[1]) for p in per),
    )  # fmt: skip
