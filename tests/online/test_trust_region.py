"""The trust region: neighbours of the settings in force, widened and narrowed by verdicts."""

from __future__ import annotations

from tuner.online.trust_region import (
    MAX_FACTOR,
    MAX_SECTORS,
    NR_REQUESTS,
    READ_AHEAD,
    SCHEDULER,
    Candidate,
    TrustRegion,
)

LIMITS = {READ_AHEAD: (0, 65536), NR_REQUESTS: (4, 2048), MAX_SECTORS: (4, 1280)}
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")


def region(**settings: object) -> TrustRegion:
    found = {READ_AHEAD: 128, NR_REQUESTS: 64, MAX_SECTORS: 512, SCHEDULER: "mq-deadline"}
    names = {"ra": READ_AHEAD, "nr": NR_REQUESTS, "ms": MAX_SECTORS, "sched": SCHEDULER}
    found.update({names[k]: v for k, v in settings.items()})  # type: ignore[misc]
    return TrustRegion(found, LIMITS, SCHEDULERS)  # type: ignore[arg-type]


def test_only_neighbours_within_a_factor_are_candidates() -> None:
    found = {(c.key, c.value) for c in region().candidates()}
    assert found == {
        (MAX_SECTORS, 1024), (MAX_SECTORS, 256), (READ_AHEAD, 256), (READ_AHEAD, 64),
        (NR_REQUESTS, 128), (NR_REQUESTS, 32), (SCHEDULER, "kyber"), (SCHEDULER, "none"),
    }  # fmt: skip


def test_limits_clamp_and_a_value_at_its_limit_has_no_neighbour_past_it() -> None:
    r = region(ms=1024, nr=4)
    assert r.neighbour(MAX_SECTORS, 1) == 1280  # the device's max_hw_sectors_kb
    assert r.neighbour(NR_REQUESTS, -1) is None
    r = region(ms=1280)
    assert r.neighbour(MAX_SECTORS, 1) is None


def test_readahead_off_steps_to_the_kernel_default() -> None:
    r = region(ra=0)
    assert r.neighbour(READ_AHEAD, 1) == 128
    assert r.neighbour(READ_AHEAD, -1) is None


def test_values_stay_whole_pages() -> None:
    r = region(ra=12)
    r.factors[(READ_AHEAD, 1)] = 1.5
    assert r.neighbour(READ_AHEAD, 1) == 20  # 18 rounded to 4 KiB pages


def test_a_win_moves_the_settings_widens_its_direction_and_is_tried_again_first() -> None:
    r = region(ms=8)
    up = Candidate(MAX_SECTORS, 16, 1)
    r.accepted(up)
    assert r.incumbent[MAX_SECTORS] == 16
    assert r.next() == Candidate(MAX_SECTORS, 64, 1)  # factor 4 now
    for value in (64, 512, 1280):  # factors 4, 8, then 16 capped at max_hw_sectors_kb
        step = r.next()
        assert step == Candidate(MAX_SECTORS, value, 1)
        r.accepted(step)
    assert r.factor(MAX_SECTORS, 1) == MAX_FACTOR
    assert r.neighbour(MAX_SECTORS, 1) is None


def test_a_hurt_narrows_until_the_direction_is_given_up() -> None:
    r = region()
    first = Candidate(NR_REQUESTS, 128, 1)
    r.rejected(first, hurt=True)
    second = r.neighbour(NR_REQUESTS, 1)
    assert second == 91  # 64 x sqrt(2)
    r.rejected(Candidate(NR_REQUESTS, 91, 1), hurt=True)
    assert r.neighbour(NR_REQUESTS, 1) is None  # below a quarter step: given up
    assert all(c.key != NR_REQUESTS or c.direction < 0 for c in r.candidates())


def test_nothing_shown_is_not_tried_again_until_the_settings_move() -> None:
    r = region()
    nothing = Candidate(READ_AHEAD, 256, 1)
    r.rejected(nothing, hurt=False)
    assert (READ_AHEAD, 256) not in {(c.key, c.value) for c in r.candidates()}
    r.accepted(Candidate(MAX_SECTORS, 1024, 1))
    assert (READ_AHEAD, 256) in {(c.key, c.value) for c in r.candidates()}


def test_the_scheduler_moves_only_to_an_offered_neighbour() -> None:
    r = TrustRegion({SCHEDULER: "none"}, LIMITS, ("none", "mq-deadline", "bfq"))
    assert [c.value for c in r.candidates()] == ["mq-deadline"]
    r = TrustRegion({SCHEDULER: "mq-deadline"}, LIMITS, ("none", "mq-deadline", "bfq"))
    assert {c.value for c in r.candidates()} == {"none", "bfq"}  # kyber is not offered


def test_a_key_the_device_lacks_is_not_moved() -> None:
    r = TrustRegion({READ_AHEAD: 128}, LIMITS, ())
    assert {c.key for c in r.candidates()} == {READ_AHEAD}
