"""Round values: a recommendation of read_ahead_kb 2316 or nr_requests 6 makes people doubt it.

The search's points sit wherever the optimiser's continuous proposals landed. Before
confirmation each changed integer is moved to the roundest value of its dimension whose
predicted loss (the Gaussian process's mean, as in simplify.py) stays within the noise: a power
of two first, then coarser-to-finer multiples of powers of two (2304 = 9 x 256 before 2316).
Confirmation then measures the rounded point, so a rounding the model got wrong costs the
recommendation, never the host.
"""

from __future__ import annotations

from collections.abc import Iterator

from tuner.search.simplify import Predict
from tuner.search.space import Dimension, Point, SearchSpace, point_key


def round_candidates(dim: Dimension, value: int) -> Iterator[int]:
    """Values of `dim` near `value`, roundest first: the powers of two on either side (the
    nearer first), then the nearest multiples of 2^k for k from high to low, each on the
    dimension's own grid (step, bounds). `value` itself comes last."""
    seen: set[int] = set()

    def fresh(candidate: int) -> Iterator[int]:
        snapped = int(dim.snap(candidate))
        if snapped not in seen and snapped > 0:
            seen.add(snapped)
            yield snapped

    if value <= 0:
        yield from fresh(value)
        return
    below = 1 << (value.bit_length() - 1)
    above = below << 1
    for power in sorted((below, above), key=lambda p: abs(p - value)):
        yield from fresh(power)
    for k in range(value.bit_length() - 2, 0, -1):
        unit = 1 << k
        yield from fresh(round(value / unit) * unit)
    yield from fresh(value)


def rounded(
    point: Point, baseline: Point, predict: Predict, space: SearchSpace, within: float
) -> Point:
    """`point` with each changed integer moved to its roundest value the model expects within
    `within` (log units) of `point` itself; the losses are held against `point`, one dimension
    at a time, so they do not add up past `within` unnoticed (each step is re-checked against
    the point's own prediction). Categorical values and unchanged ones stay."""
    reference = predict([point])[0]
    current = dict(point)
    for dim in space.dimensions:
        value = current[dim.name]
        if dim.kind != "int" or value == baseline.get(dim.name):
            continue
        options = [
            space.repair({**current, dim.name: v}) for v in round_candidates(dim, int(value))
        ]
        options = [o for o in options if o[dim.name] != baseline.get(dim.name)]
        if not options:
            continue
        values = predict(options)
        for option, predicted in zip(options, values, strict=True):
            if predicted - reference <= within:
                current = option
                break
    return current if point_key(current) != point_key(point) else dict(point)
