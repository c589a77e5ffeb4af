"""Short and long figures: a candidate whose gain differs between them beyond the noise is
reported, one within it is not."""

from __future__ import annotations

import pytest

from tuner.search.fidelity import Fidelity, Figures, TrialLength, disagreement, figures


def test_figures_are_the_mean_and_cv_and_none_without_scores() -> None:
    f = figures([100.0, 110.0, 90.0])
    assert f is not None
    assert (f.mean, f.count) == (100.0, 3)
    assert f.cv == pytest.approx(0.1)
    one = figures([50.0])
    assert one is not None and (one.cv, one.count) == (0.0, 1)
    assert figures([]) is None and figures([0.0, 1.0]) is None


def test_the_main_jobs_transient_is_beyond_the_noise() -> None:
    """The main job re-measured by hand (docs/benchmarks.md): x1.57 in 3 s runs, x1.90 in 10 s
    ones, each side's spread about 2 %."""
    base_short, cand_short = Figures(62.4, 0.017, 3), Figures(97.9, 0.0, 1)
    base_long, cand_long = Figures(53.4, 0.12, 3), Figures(101.3, 0.013, 3)
    found = disagreement(base_short, cand_short, base_long, cand_long, screen_noise=0.017)
    assert found is not None
    assert found.screened == pytest.approx(97.9 / 62.4)
    assert found.decided == pytest.approx(101.3 / 53.4)
    assert 0 < found.noise < abs(found.decided / found.screened - 1)
    assert "screened x1.569" in found.line() and "decided x1.897" in found.line()
    model = disagreement(base_short, cand_short, base_long, cand_long, 0.017, by="model")
    assert model is not None and "screened by the model x1.569" in model.line()


def test_a_gain_that_holds_at_both_lengths_is_not_reported() -> None:
    base = Figures(100.0, 0.02, 3)
    assert disagreement(base, Figures(151.0, 0.0, 1), base, Figures(148.0, 0.02, 3), 0.02) is None


def test_a_single_screened_trial_is_as_noisy_as_the_baselines_repeats() -> None:
    """The same 10 % difference: beyond the noise when the screen's cv is 1 %, within it at 8 %."""
    base = Figures(100.0, 0.01, 3)
    long = Figures(110.0, 0.01, 3)
    assert disagreement(base, Figures(100.0, 0.0, 1), base, long, 0.01) is not None
    noisy = Figures(100.0, 0.08, 3)
    assert disagreement(noisy, Figures(100.0, 0.0, 1), base, long, 0.08) is None


def test_the_decide_length_is_never_shorter_than_the_screen() -> None:
    short, long = TrialLength(1, 3), TrialLength(2, 6)
    assert Fidelity(short, long).multi and not Fidelity(short, short).multi
    with pytest.raises(ValueError):
        Fidelity(long, short)
    assert long.describe() == "2 s + 6 s" and long.seconds == 8
