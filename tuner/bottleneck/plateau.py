"""Where a scaling curve stops growing, and whether that is a cap or just the devices' sum."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuner.bottleneck.groups import Group
from tuner.units import human_rate

# Adding devices that add less than this share of what they deliver alone: no longer growing.
GROWTH_SHARE = 0.25
# A ceiling this far below the devices' summed solo rates is a cap; closer is measurement noise.
SHORTFALL = 0.10


@dataclass(frozen=True)
class Plateau:
    """The curve's ceiling, the fewest busy devices reaching it, the sum of the devices' solo
    rates, and whether the ceiling falls short of that sum by more than SHORTFALL."""

    ceiling_mbps: float
    from_devices: int
    expected_mbps: float
    capped: bool


def find_plateau(totals: Sequence[float], solos: Sequence[float]) -> Plateau:
    """The plateau of `totals` (MB/s with 1..N devices busy) given each device's solo MB/s.

    The plateau starts at the first k from which no later point grows by GROWTH_SHARE of what
    the added devices deliver alone: 100, 200, 250 from 100 MB/s disks starts at 3 (the third
    added half a disk), 100, 200, 250, 250 also at 3.
    """
    if not totals or len(totals) != len(solos):
        raise ValueError("a curve needs one total and one solo rate per device")
    start = len(totals)
    for k in range(1, len(totals) + 1):
        grows = any(
            totals[j - 1] - totals[k - 1] >= GROWTH_SHARE * sum(solos[k:j])
            for j in range(k + 1, len(totals) + 1)
        )
        if not grows:
            start = k
            break
    ceiling = max(totals[start - 1 :])
    expected = sum(solos)
    return Plateau(ceiling, start, expected, ceiling < (1 - SHORTFALL) * expected)


def summary(group: Group, plateau: Plateau) -> str:
    """One line: "loop2, loop3, loop4 share bus loop1: plateau 252 MB/s from 3 devices, 300 MB/s
    expected", or that the group scales to the sum of its devices."""
    who = f"{', '.join(group.devices)} share {group.component.label}"
    ceiling, expected = human_rate(plateau.ceiling_mbps), human_rate(plateau.expected_mbps)
    if plateau.capped:
        many = "device" if plateau.from_devices == 1 else "devices"
        return f"{who}: plateau {ceiling} from {plateau.from_devices} {many}, {expected} expected"
    return f"{who}: {ceiling} with all {len(group.devices)} busy, {expected} expected: no cap"
