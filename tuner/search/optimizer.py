"""Optimisers behind one small ask/tell interface: Bayesian (scikit-optimize) and random.

The value told is the one to MINIMISE: `throughput_value(mbps)` (= -log MB/s) or
`latency_value(p99_us)` (= log p99). Logs make a 10% gain weigh the same on a slow disk and on
a fast array, and make the optimiser's units those of the noise: a cv of 2% is 0.02 in log units.

Both optimisers ask the initial points first, in order (the current settings, then the rules'
recommendations), and never ask a point already measured: a repeat costs a trial and teaches a
GP next to nothing.
"""

from __future__ import annotations

import math
import time
import warnings
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy.optimize import minimize
from skopt import Optimizer as _SkOptimizer
from skopt.acquisition import gaussian_ei
from skopt.sampler import Lhs
from skopt.utils import cook_estimator
from threadpoolctl import threadpool_limits

from tuner.search.encoding import from_x, skopt_space, to_x
from tuner.search.space import Point, SearchSpace, point_key

# How often ask() turns down a proposal it already measured before it falls back to a random
# unmeasured point; each refusal teaches the model (the known value is told again for free).
MAX_REFUSALS = 8
RANDOM_TRIES = 2000


class SpaceExhausted(Exception):
    """Every point of the space has been measured (or asked): nothing left to try."""


def throughput_value(mbps: float) -> float:
    """The value to minimise for a throughput objective: -log(MB/s)."""
    return -math.log(max(mbps, 1e-9))  # a failed trial (0 MB/s) is very bad, not a crash


def latency_value(p99_us: float) -> float:
    """The value to minimise for a latency objective: log(p99 latency)."""
    return math.log(max(p99_us, 1e-9))


class Optimizer(Protocol):
    """What the tune loop needs from an optimiser. Values told are to be minimised."""

    def ask(self) -> Point:
        """The next point to measure; raises SpaceExhausted when none is left."""
        ...

    def tell(self, point: Point, value: float) -> None:
        """Record the value measured at `point` (one ask returned, or any point of the space)."""
        ...

    def expected_improvement(self) -> float | None:
        """How much the model still expects to gain, in the value's units; None without a model."""
        ...

    def best(self) -> tuple[Point, float]:
        """The measured point with the lowest mean value, and that mean."""
        ...

    def predict(self, points: Sequence[Point]) -> list[float] | None:
        """The model's mean value at each of `points`; None without a model."""
        ...

    def predict_std(self, points: Sequence[Point]) -> list[float] | None:
        """The model's standard deviation at each of `points` (how unsure its mean is, in
        the value's units); None without a model."""
        ...


class _Bookkeeping:
    """What both optimisers share: the queue of initial points, measurements, de-duplication."""

    def __init__(self, space: SearchSpace, initial_points: Sequence[Point]) -> None:
        if not space.dimensions:
            raise ValueError("the search space is empty: nothing to tune")
        self.space = space
        self._queue: deque[Point] = deque()
        self._points: dict[Any, Point] = {}
        self._values: dict[Any, list[float]] = {}
        self._pending: set[Any] = set()
        base: Point | None = None
        for raw in initial_points:
            # Recommendations name only the keys they change: the rest comes from the first
            # point, the current settings.
            point = self.space.snap(raw) if base is None else self.space.complete(raw, base)
            if base is None:
                base = point
            if all(point_key(point) != point_key(queued) for queued in self._queue):
                self._queue.append(point)

    def _fresh(self, point: Point) -> bool:
        key = point_key(point)
        return key not in self._values and key not in self._pending

    def _next_initial(self) -> Point | None:
        while self._queue:
            point = self._queue.popleft()
            if self._fresh(point):
                return point
        return None

    def _record(self, point: Point, value: float) -> Point:
        point = self.space.snap(point)
        key = point_key(point)
        self._pending.discard(key)
        self._points[key] = point
        self._values.setdefault(key, []).append(value)
        return point

    def _mean(self, point: Point) -> float | None:
        values = self._values.get(point_key(point))
        return sum(values) / len(values) if values else None

    def _hand_out(self, point: Point) -> Point:
        self._pending.add(point_key(point))
        return dict(point)

    def _random_fresh(self, rng: np.random.RandomState) -> Point:
        sk = skopt_space(self.space)
        for _ in range(RANDOM_TRIES):
            point = self.space.repair(from_x(self.space, sk.rvs(random_state=rng)[0]))
            if self._fresh(point):
                return point
        raise SpaceExhausted(f"no unmeasured point found in {RANDOM_TRIES} random draws")

    def best(self) -> tuple[Point, float]:
        """The measured point with the lowest mean value, and that mean."""
        if not self._values:
            raise ValueError("nothing measured yet")
        key = min(self._values, key=lambda k: sum(self._values[k]) / len(self._values[k]))
        values = self._values[key]
        return dict(self._points[key]), sum(values) / len(values)


class RandomOptimizer(_Bookkeeping):
    """The initial points, then uniform draws (log-uniform on log scales): the yardstick."""

    def __init__(self, space: SearchSpace, seed: int, initial_points: Sequence[Point] = ()) -> None:
        super().__init__(space, initial_points)
        self._rng = np.random.RandomState(seed)

    def ask(self) -> Point:
        """The next initial point, else a random one not measured yet."""
        point = self._next_initial()
        return self._hand_out(self._random_fresh(self._rng) if point is None else point)

    def tell(self, point: Point, value: float) -> None:
        """Record a measurement (the value to minimise)."""
        self._record(point, value)

    def expected_improvement(self) -> float | None:
        """Random search has no model: None."""
        return None

    def predict(self, points: Sequence[Point]) -> list[float] | None:
        """Random search has no model: None."""
        return None

    def predict_std(self, points: Sequence[Point]) -> list[float] | None:
        """Random search has no model: None."""
        return None


class SkoptOptimizer(_Bookkeeping):
    """Gaussian-process Bayesian optimisation with expected improvement, through skopt's ask/tell.

    Order of the points asked: `initial_points` as given, then `n_random` space-filling points
    (a maximin Latin hypercube), then skopt's choices. The GP models the noise (a white-noise
    term), so noisy values are averaged rather than chased.

    `gp_iterations` caps the hyper-parameter fit skopt runs on every tell (None: scipy's
    default); 25 halves a tell's time against no cap and found as many optima on the tests'
    landscape, 15 found fewer. `n_candidates` is how many random points skopt scores to pick
    the next one, and the sample `expected_improvement` looks at.
    """

    def __init__(
        self,
        space: SearchSpace,
        seed: int,
        initial_points: Sequence[Point] = (),
        n_random: int | None = None,
        *,
        n_candidates: int = 1000,
        xi: float = 0.01,
        kappa: float = 1.96,
        acq_func: str = "EI",
        gp_restarts: int = 0,
        gp_iterations: int | None = 25,
    ) -> None:
        super().__init__(space, initial_points)
        self._rng = np.random.RandomState(seed)
        dims = skopt_space(space).dimensions
        n_fill = max(3, len(dims)) if n_random is None else n_random
        if n_fill:
            lhs = Lhs(criterion="maximin", iterations=100)
            for x in lhs.generate(dims, n_fill, random_state=seed):
                point = space.repair(from_x(space, x))
                if all(point_key(point) != point_key(queued) for queued in self._queue):
                    self._queue.append(point)
        estimator = cook_estimator("GP", space=dims, random_state=seed)
        # skopt refits the GP hyper-parameters on every tell and that fit is nearly all of a
        # tell's time: no restarts, and a capped number of steps.
        estimator.set_params(n_restarts_optimizer=gp_restarts)
        if gp_iterations is not None:
            estimator.set_params(optimizer=_capped_lbfgs(gp_iterations))
        self._opt = _SkOptimizer(
            dims,
            base_estimator=estimator,
            n_initial_points=max(1, len(self._queue)),
            acq_func=acq_func,
            acq_func_kwargs={"xi": xi, "kappa": kappa},
            acq_optimizer="sampling",
            acq_optimizer_kwargs={"n_points": n_candidates},
            random_state=seed,
        )
        self._candidates = self._opt.space.transform(
            self._opt.space.rvs(n_samples=n_candidates, random_state=seed)
        )

    def ask(self) -> Point:
        """The next initial point, else skopt's choice, never a point measured before."""
        point = self._next_initial()
        if point is not None:
            return self._hand_out(point)
        for _ in range(MAX_REFUSALS):
            with warnings.catch_warnings(), _one_thread():
                warnings.simplefilter("ignore")  # skopt warns about its own repeats
                x = self._opt.ask()
            point = self.space.repair(from_x(self.space, x))
            if self._fresh(point):
                return self._hand_out(point)
            known = self._mean(point)
            if known is None:
                break  # asked and not told yet: nothing to teach the model
            # The proposal repairs onto a measured point (nr_requests capped under scheduler
            # none, say): tell the model what it is worth there, without spending a trial, so
            # it learns that corner is flat, and ask again.
            self._tell_model(x, known)
        return self._hand_out(self._random_fresh(self._rng))

    def tell(self, point: Point, value: float) -> None:
        """Record a measurement (the value to minimise) and refit the model."""
        point = self._record(point, value)
        self._tell_model(to_x(self.space, point), value)

    def _tell_model(self, x: list[Any], value: float) -> None:
        with warnings.catch_warnings(), _one_thread():
            warnings.simplefilter("ignore")
            self._opt.tell(list(x), float(value))

    def expected_improvement(self) -> float | None:
        """The largest expected improvement (xi = 0) over the candidates, in the value's units.

        Candidates: a fixed random sample of the space plus skopt's next point. The incumbent
        is the model's best predicted mean at a measured point, not the lowest noisy value
        (which would be luck, and make every later improvement look smaller). None until the
        model is fitted, after the initial points.
        """
        if not self._opt.models:
            return None
        model = self._opt.models[-1]
        with _one_thread():
            incumbent = float(np.min(model.predict(self._opt.space.transform(self._opt.Xi))))
            candidates = self._candidates
            if hasattr(self._opt, "_next_x"):
                next_x = self._opt.space.transform([self._opt._next_x])
                candidates = np.vstack([candidates, next_x])
            return float(np.max(gaussian_ei(candidates, model, y_opt=incumbent, xi=0.0)))

    def predict(self, points: Sequence[Point]) -> list[float] | None:
        """The GP's mean value at each of `points`; None until it is fitted."""
        if not self._opt.models or not points:
            return None
        xs = self._opt.space.transform([to_x(self.space, self.space.snap(p)) for p in points])
        with _one_thread():
            return [float(v) for v in self._opt.models[-1].predict(xs)]

    def predict_std(self, points: Sequence[Point]) -> list[float] | None:
        """The GP's standard deviation at each of `points`; None until it is fitted."""
        if not self._opt.models or not points:
            return None
        xs = self._opt.space.transform([to_x(self.space, self.space.snap(p)) for p in points])
        with _one_thread():
            _, std = self._opt.models[-1].predict(xs, return_std=True)
            return [float(v) for v in std]


def _one_thread() -> Any:
    """Keep numpy's BLAS on one thread: a GP over a few dozen points is made of tiny matrix
    operations, which BLAS threads slow down (several times over on a 2-core host that is also
    running fio) instead of speeding up."""
    return threadpool_limits(limits=1)


def _capped_lbfgs(iterations: int) -> Any:
    """A GP hyper-parameter optimiser: L-BFGS-B stopped after `iterations` steps."""

    def optimizer(obj_func: Any, initial_theta: Any, bounds: Any) -> tuple[Any, float]:
        result = minimize(
            obj_func, initial_theta, method="L-BFGS-B", jac=True, bounds=bounds,
            options={"maxiter": iterations},
        )  # fmt: skip
        return result.x, float(result.fun)

    return optimizer


@dataclass(frozen=True)
class Step:
    """One trial of a search: the point, the value told, and the EI reported when it was asked."""

    point: Point
    value: float
    expected_improvement: float | None = None


def should_stop(
    history: Sequence[Step],
    noise_cv: float,
    budget: int | None = None,
    deadline: float | None = None,
    *,
    now: float | None = None,
    patience: int = 3,
) -> str | None:
    """Why the search should stop now, or None to go on.

    Stops when `budget` trials are spent, when `deadline` (a time.monotonic() value) has
    passed, or when the expected improvement stayed below the measured noise for `patience`
    asks in a row. `noise_cv` is the coefficient of variation of repeated baseline trials; in
    log units a cv of 2% is a spread of 0.02, so a smaller expected gain could not be told apart
    from noise, not even by the confirmation phase.
    """
    if budget is not None and len(history) >= budget:
        return f"trial budget spent ({len(history)} of {budget})"
    clock = time.monotonic() if now is None else now
    if deadline is not None and clock >= deadline:
        return f"time budget spent after {len(history)} trials"
    recent = [step.expected_improvement for step in history[-patience:]]
    if len(recent) == patience and all(ei is not None and ei < noise_cv for ei in recent):
        last = recent[-1]
        return (
            f"expected improvement {last:.4f} below the noise {noise_cv:.4f} (log units) "
            f"for {patience} trials in a row"
        )
    return None
