"""A tune on a real loop device: the baseline's repeats are told, never asked for again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.loopdev import attached_as, loop_device
from tuner.rules.installed import load_rule_base
from tuner.search.confirm import Confirmation
from tuner.search.space import Dimension, SearchSpace
from tuner.trials.faults import GONE, TrialFault
from tuner.trials.targets import TrialTarget
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tune.session import Tune, TuneConfig, _left_out, _with_rules, trial_with
from tuner.tune.setup import current_point


@pytest.mark.lab
@pytest.mark.lab_parallel  # counts trials by phase, on its own loop device
def test_the_search_spends_no_trial_on_the_baseline_it_already_measured(state: Path) -> None:
    # About 15 s: 2 baseline, 3 search and 4 confirmation trials of 1 s (plus fio start-up and
    # a cache drop each) on a /dev/shm loop device.
    workload = load_rule_base().workload("stream-read")
    assert workload is not None
    with loop_device(128) as name:
        subprocess.run(["dd", "if=/dev/urandom", f"of=/dev/{name}", "bs=1M", "count=128",
                        "status=none"], check=True)  # fmt: skip
        ra = ("block.read_ahead_kb", name)
        space = SearchSpace((Dimension(ra[0], name, "int", 128, 65536, log=True, step=4),))
        before = Path(f"/sys/block/{name}/queue/read_ahead_kb").read_text().strip()
        config = TuneConfig(budget=3, runtime_s=1.0, ramp_s=0.0, baseline_repeats=2,
                            confirm_rounds=2, top_k=1)  # fmt: skip
        with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
            baseline = current_point(space, engine.tunables, workload)
            recommended = {ra: 8192 if baseline[ra] != 8192 else 4096}
            target = TrialTarget.device(f"/dev/{name}")
            result = Tune(target, workload, space, engine, config).run(baseline, [recommended])
        after = Path(f"/sys/block/{name}/queue/read_ahead_kb").read_text().strip()
    phases = [t.phase for t in result.trials]
    assert phases[:2] == ["baseline", "baseline"]
    searched = [t for t in result.trials if t.phase in ("initial", "search")]
    # Three budget trials, the first the recommendation, none of them the baseline again.
    assert len(searched) == 3
    assert (searched[0].phase, searched[0].settings) == ("initial", recommended)
    assert all(t.settings != baseline for t in searched)
    assert after == before


@pytest.mark.lab
def test_a_device_that_took_the_targets_name_is_neither_tuned_nor_read(state: Path) -> None:
    """The target's loop device detached and its name taken by another file (another
    process's `losetup`): the next trial stops, device gone, before writing that device's
    queue or running fio on it."""
    workload = load_rule_base().workload("stream-read")
    assert workload is not None
    with loop_device(64) as name:
        target = TrialTarget.device(f"/dev/{name}")
        assert target.attachments and target.attachments[0] is not None
        subprocess.run(["losetup", "-d", f"/dev/{name}"], check=True, timeout=30)
        with attached_as(name):
            ra = Path(f"/sys/block/{name}/queue/read_ahead_kb")
            theirs = ra.read_text().strip()
            wanted = {("block.read_ahead_kb", name): 4096 if theirs != "4096" else 8192}
            with (
                Journal() as journal,
                TunableEngine(Path("/"), journal) as engine,
                pytest.raises(TrialFault) as err,
            ):
                trial_with(engine, wanted, target, workload, None, 1.0, 0.0)
            assert ra.read_text().strip() == theirs
    assert (err.value.device, err.value.kind) == (name, GONE)
    assert "replaced since the tune began (diskseq" in str(err.value)


def test_confirmation_keeps_a_slot_for_the_rules_point_one_trial_ranked_low() -> None:
    dev = "loop0"
    ra = ("block.read_ahead_kb", dev)
    base, rules, best, second = ({ra: v} for v in (128, 4096, 8192, 16384))
    assert _with_rules([best, second], [rules], base) == [best, rules]
    assert _with_rules([rules, best], [rules], base) == [rules, best]  # ranked: left alone
    assert _with_rules([best, second], [base], base) == [best, second]  # nothing to add
    assert _with_rules([best], [rules], base) == [best]  # one slot: the best keeps it


def test_left_out_names_the_search_changes_the_recommendation_does_not_make() -> None:
    dev = "loop0"
    ra, nr, sched = (("block.read_ahead_kb", dev), ("block.nr_requests", dev),
                     ("block.scheduler", dev))  # fmt: skip
    base = {ra: 128, nr: 128, sched: "none"}
    searched = {ra: 252, nr: 213, sched: "kyber"}
    lean = {ra: 252, nr: 128, sched: "none"}

    def outcome(chosen: bool) -> Confirmation:
        return Confirmation(lean, 50.0, 0.01, 100.0, 0.01, 2.0, 1.9, 2.1, chosen=chosen,
                            rounds=3, baseline_point=base)  # fmt: skip

    assert _left_out(searched, outcome(True)) == {nr: 213, sched: "kyber"}
    assert _left_out(searched, outcome(False)) == {}  # nothing recommended, nothing left out
