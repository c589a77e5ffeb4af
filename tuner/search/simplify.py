"""Fewer changes for the same gain: put back the search's changes the model says do not matter.

The search's best point changes every dimension it was free to change, and a trial cannot tell
a setting that matters from one that rode along: on the lab's single disk the read winner came
with kyber, nr_requests 213 and max_sectors_kb 1172 beside the readahead that made the gain.
An engineer applying that plan would rightly ask why the scheduler changed. Backward elimination
on the Gaussian process's mean proposes the point with the fewest changes the model expects to
be as fast; confirmation then measures it beside the full point (tuner.search.confirm).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tuner.search.space import Point, SearchSpace, point_key

# The model's predicted means of points, in the optimiser's units (lower is better).
Predict = Callable[[Sequence[Point]], Sequence[float]]


def changes_from(point: Point, baseline: Point) -> int:
    """How many settings `point` changes from `baseline`."""
    return sum(1 for slot, value in point.items() if baseline.get(slot, value) != value)


def simplest(
    best: Point, baseline: Point, predict: Predict, space: SearchSpace, within: float
) -> Point:
    """`best` with changes put back to `baseline` while the model predicts a loss below `within`.

    Greedy: each step puts back the change whose removal the model minds least, and stops when
    that one would cost more than `within` (in the optimiser's log units, so 0.02 is about 2 %)
    against `best` itself: the losses do not add up step by step past `within`. Points are
    repaired as the search's own are, so a put-back scheduler none takes its depth cap along.
    """
    reference = predict([best])[0]
    current = dict(best)
    while True:
        reverted = [space.repair({**current, slot: baseline[slot]})
                    for slot in space.names() if current[slot] != baseline[slot]]  # fmt: skip
        reverted = [p for p in reverted if point_key(p) != point_key(current)]
        if not reverted:
            return current
        values = predict(reverted)
        cheapest = min(range(len(reverted)), key=lambda i: values[i])
        if values[cheapest] - reference > within:
            return current
        current = reverted[cheapest]
