"""Round values: the roundest value the model expects within the noise replaces the search's."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tests.search.synthetic import CURRENT, NR, RA, SCHED, SPACE, true_mbps
from tuner.search.optimizer import throughput_value
from tuner.search.rounding import round_candidates, rounded
from tuner.search.space import Dimension, Point

READAHEAD = Dimension("block.read_ahead_kb", "loop0", "int", 128, 65536, log=True, step=4)
DEPTH = Dimension("block.nr_requests", "loop0", "int", 4, 1024, log=True)


def test_candidates_come_roundest_first_and_stay_on_the_grid() -> None:
    assert list(round_candidates(READAHEAD, 2316))[:4] == [2048, 4096, 2560, 2304]
    assert list(round_candidates(READAHEAD, 2316))[-1] == 2316
    assert list(round_candidates(DEPTH, 6)) == [4, 8, 6]
    assert list(round_candidates(READAHEAD, 40988))[:2] == [32768, 65536]
    assert all(v % 4 == 0 for v in round_candidates(READAHEAD, 1234))


def model(points: Sequence[Point]) -> list[float]:
    """A noise-free model of the synthetic landscape, in the optimiser's units."""
    return [throughput_value(true_mbps(p)) for p in points]


def test_a_value_within_the_noise_of_a_round_one_becomes_round() -> None:
    found = {RA: 4316, NR: 70, SCHED: "mq-deadline"}
    assert rounded(found, CURRENT, model, SPACE, within=0.01) == {
        RA: 4096,
        NR: 64,
        SCHED: "mq-deadline",
    }


def test_a_rounding_the_model_minds_is_not_made() -> None:
    """On a sharp optimum at 1436 KB the powers of two cost far more than the noise: the
    roundest value within it is a multiple of 32, never a worse one."""

    def sharp(points: Sequence[Point]) -> list[float]:
        return [(math.log2(int(p[RA]) / 1436) / 0.1) ** 2 for p in points]

    found = {RA: 1436, NR: 64, SCHED: "none"}
    chosen = rounded(found, CURRENT, sharp, SPACE, within=0.002)
    assert chosen[RA] == 1440
    assert sharp([chosen])[0] - sharp([found])[0] <= 0.002


def test_unchanged_and_categorical_values_stay() -> None:
    found = {RA: 4316, NR: 128, SCHED: "kyber"}
    chosen = rounded(found, CURRENT, model, SPACE, within=0.01)
    assert chosen[NR] == 128 and chosen[SCHED] == "kyber"
