"""Screen short, decide long: the two trial lengths of a search, and where they disagree.

Short trials are cheap enough to screen many points, but on a slow device or a long path they
measure a transient (a readahead window not yet consumed, a TCP window still growing), and
their noise ranks points by luck. So the search screens at the short length, and
confirmation measures its few candidates at the full length, interleaved with the baseline:
the claim is those figures (multi-fidelity; TUNA, EuroSys 2025, on noisy short trials).
A candidate whose gain at the two lengths differs by more than the noise of both is
reported: the short trials' ranking did not hold, or the length changed what was measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

NOISE_FLOOR = 0.005
"""The least cv assumed for a set of trials (the lab's trial noise, 0.3-0.7 %): three equal
figures do not make a length noiseless."""

Z = 2.0
"""How many standard deviations of the two gains' difference count as disagreement (about
95 % for a normal difference of log ratios)."""


@dataclass(frozen=True)
class TrialLength:
    """How long the search asks one trial to run: `ramp_s` unmeasured (warm-up, slow
    start), then `runtime_s` measured; `why` says where the length comes from. A disk trial
    takes these as floors and may run longer to reach steady state
    (`tuner.trials.steady.WindowBounds`)."""

    ramp_s: float
    runtime_s: float
    why: str = ""
    ceiling_s: float | None = None
    """The longest the measured part may run, when a bound says so: what a `--time` bound
    leaves once the ramp is over (a trial that ends at steady state may otherwise run to
    twice its floor)."""

    @property
    def seconds(self) -> float:
        """The trial's length, ramp and measured part."""
        return self.ramp_s + self.runtime_s

    def describe(self) -> str:
        """'1 s + 3 s' (ramp + measured), for people."""
        return f"{self.ramp_s:g} s + {self.runtime_s:g} s"


@dataclass(frozen=True)
class Fidelity:
    """The search's two lengths: `screen` for the search's trials and the baseline's repeats,
    `decide` for confirmation's (at least as long)."""

    screen: TrialLength
    decide: TrialLength

    def __post_init__(self) -> None:
        if self.decide.seconds < self.screen.seconds:
            raise ValueError("the decide length cannot be shorter than the screen length")

    @property
    def multi(self) -> bool:
        """True when confirmation measures longer than the search screened."""
        return self.decide.seconds > self.screen.seconds


@dataclass(frozen=True)
class Figures:
    """One point's scores at one length: the mean and its coefficient of variation."""

    mean: float
    cv: float
    count: int


@dataclass(frozen=True)
class Disagreement:
    """A candidate whose gain over the baseline measured differently at the two lengths.

    `screened`, `decided`: the gains (candidate over baseline) at the screen and decide
    lengths; `noise`: the relative difference the noise of both allows (Z standard
    deviations of the difference of their logs).
    """

    screened: float
    decided: float
    noise: float
    screened_score: float
    decided_score: float
    by: str = "trials"  # or "model": the search's model, for a point it never measured as is

    def line(self) -> str:
        """'screened x1.57 (97.9), decided x1.90 (101.3): beyond the noise (±8.1 %)'."""
        how = "" if self.by == "trials" else " by the model"
        return (f"screened{how} x{self.screened:.3f} ({self.screened_score:.1f}), decided "
                f"x{self.decided:.3f} ({self.decided_score:.1f}): beyond the noise "
                f"(±{self.noise:.1%})")  # fmt: skip


def figures(scores: Sequence[float]) -> Figures | None:
    """The mean and cv of `scores`, None when there are none (or they are not positive)."""
    if not scores or min(scores) <= 0:
        return None
    mean = sum(scores) / len(scores)
    if len(scores) < 2:
        return Figures(mean, 0.0, 1)
    var = sum((s - mean) ** 2 for s in scores) / (len(scores) - 1)
    return Figures(mean, math.sqrt(var) / mean, len(scores))


def disagreement(
    base_short: Figures,
    cand_short: Figures,
    base_long: Figures,
    cand_long: Figures,
    screen_noise: float,
    by: str = "trials",
) -> Disagreement | None:
    """The disagreement between a candidate's screened and decided gains, None within noise.

    Each gain is a ratio of means; its log's variance is the sum of both means' (cv² / n,
    a cv being the log's standard deviation for small spreads). A single screened trial has no
    cv of its own: it is given `screen_noise`, the baseline's repeats' cv at the screen
    length. The model's figure (`by` "model", for a point the search never measured as it is)
    comes with the model's own standard deviation there as its cv. Every cv is at least
    NOISE_FLOOR.
    """
    short = cand_short.mean / base_short.mean
    long = cand_long.mean / base_long.mean

    def var(f: Figures, fallback: float) -> float:
        cv = max(f.cv, fallback, NOISE_FLOOR)
        return cv * cv / f.count

    screen_cv = max(screen_noise, NOISE_FLOOR)
    spread = math.sqrt(var(base_short, screen_cv) + var(cand_short, screen_cv)
                       + var(base_long, NOISE_FLOOR) + var(cand_long, NOISE_FLOOR))  # fmt: skip
    allowed = Z * spread
    if abs(math.log(long) - math.log(short)) <= allowed:
        return None
    return Disagreement(short, long, math.exp(allowed) - 1, cand_short.mean, cand_long.mean, by)
