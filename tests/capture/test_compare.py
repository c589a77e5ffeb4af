"""A reproduction's capture beside the original's: against the application it reproduces."""

from __future__ import annotations

from tests.capture.samples import FIXTURES, collect
from tuner.capture.compare import application, compare, fidelity
from tuner.capture.fingerprint import load


def test_a_reproduced_group_is_held_to_its_own_figures() -> None:
    """Four tar readers, then xfs's log 30 s on: the device's active span runs to the log's
    writes, so its mean depth is 4.8 where the readers kept 7.0 while they read; the
    reproduction (the readers' section alone) is compared with the readers' figures."""
    found = load(FIXTURES / "tar-backup-ra.json")
    dev, readers = found.busiest(), application(found).busiest()
    assert dev is not None and readers is not None
    assert dev["queue_depth"]["mean"] < 5 < 7 < readers["queue_depth"]["mean"]
    assert readers["requests"] == 6146 and readers["read_share"] == 1.0
    # compared with itself, the application is a perfect reproduction
    assert fidelity(compare(application(found), application(found))) == 0.0


def test_a_device_of_one_group_or_of_several_sections_is_its_own_application() -> None:
    alone = collect("random-mix")[1]
    assert application(alone) is alone
    several = collect("fdatasync")[1]
    assert application(several) is several
    (busiest,) = application(several, one=True).devices  # what a trial runs: one section
    assert busiest["by_process"][0]["comm"] == "ext4lazyinit"
