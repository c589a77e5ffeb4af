"""The plateau of a scaling curve: where it stops growing, and whether that is a cap."""

from __future__ import annotations

import pytest

from tuner.bottleneck import Component, Group, find_plateau, summary


def test_three_disks_on_a_bus_level_off_at_the_third() -> None:
    plateau = find_plateau([102.0, 204.0, 252.0], [102.0, 99.0, 99.0])
    assert plateau.from_devices == 3
    assert plateau.ceiling_mbps == 252.0
    assert plateau.expected_mbps == 300.0
    assert plateau.capped


def test_a_flat_tail_starts_where_growth_stops() -> None:
    plateau = find_plateau([100.0, 200.0, 250.0, 252.0, 249.0], [100.0] * 5)
    assert (plateau.from_devices, plateau.ceiling_mbps, plateau.capped) == (3, 252.0, True)


def test_a_curve_that_keeps_growing_is_not_capped() -> None:
    plateau = find_plateau([100.0, 197.0], [100.0, 101.0])
    assert plateau.from_devices == 2
    assert not plateau.capped


def test_noise_within_the_shortfall_is_not_a_cap() -> None:
    assert not find_plateau([100.0, 190.0, 280.0], [100.0, 100.0, 100.0]).capped


def test_a_curve_needs_a_solo_rate_per_point() -> None:
    with pytest.raises(ValueError):
        find_plateau([100.0, 200.0], [100.0])


def test_summary_names_the_component_and_both_rates() -> None:
    group = Group(Component("block:loop3", "bus", "loop3"), ("loop4", "loop5", "loop6"))
    capped = find_plateau([100.0, 200.0, 252.0], [100.0, 100.0, 100.0])
    assert summary(group, capped) == (
        "loop4, loop5, loop6 share bus loop3: plateau 252 MB/s from 3 devices, 300 MB/s expected"
    )
    free = find_plateau([100.0, 200.0, 300.0], [100.0, 100.0, 100.0])
    assert summary(group, free).endswith("300 MB/s with all 3 busy, 300 MB/s expected: no cap")
