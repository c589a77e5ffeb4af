"""The trust region: which settings an online tune may try next on a live workload.

Only neighbours of the settings in force are tried, one key at a time: a numeric key within a
factor of its value (up or down), the scheduler only among its neighbours in SCHEDULERS. A
direction that won widens (its factor doubles, up to MAX_FACTOR) and is tried again first; one
that hurt narrows (the factor's square root) and, below MIN_FACTOR, is given up; one that
showed nothing is not tried again until the settings in force change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from tuner.tunables.base import Value

READ_AHEAD, MAX_SECTORS, NR_REQUESTS, SCHEDULER = (
    "block.read_ahead_kb", "block.max_sectors_kb", "block.nr_requests", "block.scheduler"
)  # fmt: skip
KEYS = (MAX_SECTORS, READ_AHEAD, NR_REQUESTS, SCHEDULER)
"""The keys an online tune moves, in the order it tries them: the request-size limits first,
whose effect on streams is the largest, the queue's depth and ordering after."""
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
"""Schedulers by how much they do: each one's neighbours are the one before and after it
among those the device offers."""
START_FACTOR = 2.0
MAX_FACTOR = 16.0
MIN_FACTOR = 1.25
"""A step below a quarter is inside the noise of a slice's figures: not worth a slice."""
STEP = {READ_AHEAD: 4, MAX_SECTORS: 4, NR_REQUESTS: 1}
"""What values are multiples of: read_ahead_kb and max_sectors_kb hold whole 4 KiB pages."""
FIRST_READ_AHEAD_KB = 128
"""read_ahead_kb 0 has no factor: the first step up is the kernel's own default window."""


@dataclass(frozen=True)
class Candidate:
    """One key moved from the settings in force: which way, and to what."""

    key: str
    value: Value
    direction: int  # +1 up, -1 down

    @property
    def label(self) -> str:
        """key=value, as the result shows it."""
        return f"{self.key}={self.value}"


@dataclass
class TrustRegion:
    """The settings in force and the region around them; `next` proposes, the verdicts move it.

    `limits` bounds the numeric keys (max_sectors_kb by the device's max_hw_sectors_kb);
    `schedulers` are those the device offers. Keys absent from `incumbent` are not moved.
    """

    incumbent: dict[str, Value]
    limits: Mapping[str, tuple[int, int]]
    schedulers: tuple[str, ...] = ()
    factors: dict[tuple[str, int], float] = field(default_factory=dict)
    tried: set[tuple[str, Value]] = field(default_factory=set)
    preferred: tuple[str, int] | None = None

    def factor(self, key: str, direction: int) -> float:
        """The factor of the next step of `key` in `direction`."""
        return self.factors.get((key, direction), START_FACTOR)

    def neighbour(self, key: str, direction: int) -> Value | None:
        """The value one step from the one in force, or None (at a limit, or given up)."""
        now = self.incumbent.get(key)
        if now is None:
            return None
        if key == SCHEDULER:
            order = [s for s in SCHEDULERS if s in self.schedulers]
            if now not in order:
                return None
            at = order.index(str(now)) + direction
            return order[at] if 0 <= at < len(order) else None
        f = self.factor(key, direction)
        if f < MIN_FACTOR or not isinstance(now, int):
            return None
        low, high = self.limits.get(key, (0, 2**31))
        step = STEP.get(key, 1)
        if now == 0 and key == READ_AHEAD:
            value = FIRST_READ_AHEAD_KB if direction > 0 else 0
        else:
            raw = now * f if direction > 0 else now / f
            value = max(step, math.floor(raw / step + 0.5) * step)  # half up, not to even
        value = min(high, max(low, value))
        return value if value != now else None

    def candidates(self) -> list[Candidate]:
        """Every candidate the region allows now, the direction that last won first."""
        pairs = [(key, d) for key in KEYS for d in (1, -1)]
        if self.preferred in pairs:
            pairs.remove(self.preferred)
            pairs.insert(0, self.preferred)
        found = []
        for key, direction in pairs:
            value = self.neighbour(key, direction)
            if value is not None and (key, value) not in self.tried:
                found.append(Candidate(key, value, direction))
        return found

    def next(self) -> Candidate | None:
        """The next candidate to try, or None when the region holds nothing untried."""
        found = self.candidates()
        return found[0] if found else None

    def accepted(self, candidate: Candidate) -> None:
        """The candidate won: it is the setting in force, and its direction widens."""
        self.incumbent[candidate.key] = candidate.value
        where = (candidate.key, candidate.direction)
        self.factors[where] = min(MAX_FACTOR, self.factor(*where) * 2)
        self.preferred = where
        self.tried.clear()  # the landscape around the new setting is new

    def rejected(self, candidate: Candidate, hurt: bool) -> None:
        """The candidate lost (`hurt`: it was worse, or broke the latency bound) or showed
        nothing; it is not tried again here, and a direction that hurt narrows."""
        self.tried.add((candidate.key, candidate.value))
        where = (candidate.key, candidate.direction)
        if hurt:
            self.factors[where] = math.sqrt(self.factor(*where))
        if self.preferred == where:
            self.preferred = None
