"""A search dimension: one setting on one target, the values a tune may try for it.

It lives with the tunables because a tunable declares its own (`Tunable.dimension`): the scale
and the bounds the hardware gives belong to the setting, not to the optimiser. tuner/search
builds the space from these and encodes it for scikit-optimize.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

Value = int | str
"""A point's value on one dimension: an int, or a choice such as a scheduler's name."""


@dataclass(frozen=True)
class Dimension:
    """One setting on one target: an int range (log scale if `log`) or a set of choices.

    Int values are multiples of `step` (read_ahead_kb moves in 4 KB pages), or powers of two
    when `pow2` (fio block sizes); both make the optimiser's grid the one the kernel sees.
    `kept` is set for a setting of several words of which the last one is searched (tcp_rmem's
    max): the words before it, written as they are (`whole`), so a point stays one int.
    """

    key: str
    target: str
    kind: str  # "int" or "categorical"
    low: int = 0
    high: int = 0
    log: bool = False
    choices: tuple[Value, ...] = ()
    step: int = 1
    pow2: bool = False
    kept: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind == "categorical":
            if not self.choices:
                raise ValueError(f"{self.key} on {self.target}: no choices")
        elif self.kind == "int":
            if self.low > self.high:
                raise ValueError(f"{self.key} on {self.target}: low {self.low} > high {self.high}")
            if (self.log or self.pow2) and self.low <= 0:
                raise ValueError(f"{self.key} on {self.target}: a log scale needs low > 0")
        else:
            raise ValueError(f"{self.key} on {self.target}: unknown kind {self.kind!r}")

    @property
    def name(self) -> tuple[str, str]:
        """The point's key for this dimension: (key, target)."""
        return (self.key, self.target)

    def snap(self, value: Value) -> Value:
        """The nearest value of the domain (clamped, rounded to the step or power of two)."""
        if self.kind == "categorical":
            if value not in self.choices:
                raise ValueError(f"{self.key} on {self.target}: {value!r} not in {self.choices}")
            return value
        number = int(value)
        if self.pow2:
            exponent = round(math.log2(max(number, 1)))
            low, high = self.low.bit_length() - 1, self.high.bit_length() - 1
            return int(2 ** min(max(exponent, low), high))
        snapped = round(number / self.step) * self.step
        low = -(-self.low // self.step) * self.step  # the smallest multiple of step >= low
        return min(max(snapped, low), self.high // self.step * self.step)

    def unit(self, value: Value) -> float:
        """`value` mapped into [0, 1] (log scale where the domain is): for distances."""
        if self.kind == "categorical":
            # The middle of the choice's slice of [0, 1], so from_unit gives the choice back.
            return (self.choices.index(value) + 0.5) / len(self.choices)
        if self.low == self.high:
            return 0.0
        if self.log or self.pow2:
            return math.log(int(value) / self.low) / math.log(self.high / self.low)
        return (int(value) - self.low) / (self.high - self.low)

    def from_unit(self, unit: float) -> Value:
        """The domain value at position `unit` in [0, 1] (the inverse of `unit`), snapped."""
        unit = min(max(unit, 0.0), 1.0)
        if self.kind == "categorical":
            return self.choices[min(int(unit * len(self.choices)), len(self.choices) - 1)]
        if self.log or self.pow2:
            return self.snap(round(self.low * (self.high / self.low) ** unit))
        return self.snap(round(self.low + unit * (self.high - self.low)))

    def part(self, value: object) -> object:
        """The searched part of a value as read: the last word for a `kept` dimension (the
        max of a (min, default, max) triple), the value itself otherwise."""
        if self.kept and isinstance(value, tuple) and value:
            return value[-1]
        return value

    def whole(self, value: Value) -> Value | tuple[int, ...]:
        """What a trial writes for a point's `value`: the kept words and the value (each kept
        word no larger than it, so a triple stays ascending), or the value itself."""
        if not self.kept:
            return value
        last = int(value)
        return (*(min(word, last) for word in self.kept), last)

    def distance(self, a: Value, b: Value) -> float:
        """How far apart two values are: 0 or 1 for choices, the unit-scale gap for ints."""
        if self.kind == "categorical":
            return 0.0 if a == b else 1.0
        return abs(self.unit(a) - self.unit(b))


def widened(dim: Dimension, current: int | None) -> Dimension:
    """`dim` with its range stretched to hold the current value, so the baseline is a point."""
    if current is None or dim.low <= current <= dim.high:
        return dim
    if current <= 0 and dim.log:
        return dim  # read_ahead_kb 0 (off) has no place on a log scale: the baseline snaps up
    low = min(dim.low, current // dim.step * dim.step)
    high = max(dim.high, -(-current // dim.step) * dim.step)
    return replace(dim, low=max(low, 1) if dim.log else low, high=high)


@dataclass(frozen=True)
class SpaceContext:
    """What a dimension's bounds depend on beyond the host's files.

    `dirtyable` is the memory dirty data may take in the workload's conditions (the page
    cache a tune grants it), for the writeback thresholds; None leaves them out.
    `reads` and `writes` say which way the workload's I/O goes: a setting its trials could
    not feel (readahead for a pure writer) is not searched, so no plan carries it.
    `keys` are the keys the tune varies (None: every key with a dimension): a key whose domain
    depends on another's (nr_requests on whether the scheduler moves) asks `searches`.
    `entries` are the devices reads enter and `queued` the devices whose request queues the
    I/O passes (tuner/tune/stack.py); None takes every device for both (one plain disk).
    `none_depth` maps a device to the most requests it accepts with scheduler none where the
    caller knows better than the device's own files (an NVMe's tag depth).
    `small_random` says the workload's requests are random and of 64 KiB or less (judged by
    IOPS): where completion placement and merge attempts cost CPU per request
    (block.rq_affinity, block.nomerges). `buffered` says its I/O goes through the page cache:
    writeback throttling (block.wbt_lat_usec) acts on buffered writes only.
    `tcp` says the workload moves its data over TCP (a transfer: tuner/tune/transfer.py): the
    socket buffers' max is searched from its current value up to `tcp_window_high` bytes, and
    the congestion control among the algorithms the target may pick.
    """

    dirtyable: int | None = None
    reads: bool = True
    writes: bool = True
    keys: frozenset[str] | None = None
    entries: frozenset[str] | None = None
    queued: frozenset[str] | None = None
    none_depth: Mapping[str, int] = field(default_factory=dict)
    small_random: bool = False
    buffered: bool = True
    tcp: bool = False
    tcp_window_high: int = 64 << 20

    def searches(self, key: str) -> bool:
        """True when the tune varies `key`."""
        return self.keys is None or key in self.keys

    def enters(self, device: str) -> bool:
        """True when reads enter the stack at `device` (where readahead acts)."""
        return self.entries is None or device in self.entries

    def queues(self, device: str) -> bool:
        """True when the I/O passes `device`'s request queue (where scheduler, depth and
        request size act)."""
        return self.queued is None or device in self.queued
