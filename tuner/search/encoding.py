"""Between our points and scikit-optimize's: each Dimension becomes one skopt dimension.

skopt works on lists in dimension order. Steps and powers of two are folded into the skopt
integer (read_ahead_kb 128..65536 in 4 KB steps is Integer(32, 16384) times 4; bs 4 KiB..4 MiB
is the exponent 12..22), so every value skopt proposes is already one the kernel accepts and two
different proposals never round onto one value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from skopt.space import Categorical, Integer, Space

from tuner.search.space import Dimension, Point, SearchSpace, Value


def skopt_dimension(dim: Dimension) -> Any:
    """The skopt dimension for `dim` (Integer, log-uniform where the domain is a log scale)."""
    if dim.kind == "categorical":
        return Categorical(list(dim.choices), name=f"{dim.key}@{dim.target}")
    if dim.pow2:
        low, high = dim.low.bit_length() - 1, dim.high.bit_length() - 1
        return Integer(low, high, name=f"{dim.key}@{dim.target}")
    low, high = -(-dim.low // dim.step), dim.high // dim.step
    if low >= high:
        raise ValueError(f"{dim.key} on {dim.target}: a single value is nothing to search")
    prior = "log-uniform" if dim.log else "uniform"
    return Integer(low, high, prior=prior, base=2, name=f"{dim.key}@{dim.target}")


def skopt_space(space: SearchSpace) -> Space:
    """A skopt Space with one dimension per Dimension of `space`, in the same order."""
    return Space([skopt_dimension(d) for d in space.dimensions])


def to_x(space: SearchSpace, point: Point) -> list[Any]:
    """`point` (already on the space) as skopt's list."""
    x: list[Any] = []
    for dim in space.dimensions:
        value = point[dim.name]
        if dim.kind == "categorical":
            x.append(value)
        elif dim.pow2:
            x.append(int(math.log2(int(value))))
        else:
            x.append(int(value) // dim.step)
    return x


def from_x(space: SearchSpace, x: Sequence[Any]) -> Point:
    """skopt's list as a point (plain Python values, not numpy scalars), before repair."""
    point: Point = {}
    for dim, raw in zip(space.dimensions, x, strict=True):
        value: Value
        if dim.kind == "categorical":
            # numpy scalars from skopt become the choice itself, with its own type.
            value = next(c for c in dim.choices if c == raw)
        elif dim.pow2:
            value = 2 ** int(raw)
        else:
            value = int(raw) * dim.step
        point[dim.name] = value
    return point
