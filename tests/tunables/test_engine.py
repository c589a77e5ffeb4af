"""TunableEngine on a fixture host: journal first, write, read back, restore in reverse."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import attach, detach
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TunableError
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal

SETTINGS: dict[tuple[str, str], object] = {
    ("block.read_ahead_kb", "loop3"): 4096,
    ("vm.dirty_ratio", "host"): 40,
    ("net.ipv4.tcp_rmem", "host"): "4096 87380 16777216",
    ("block.nomerges", "/dev/loop3"): 2,
}


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Journal]:
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(tmp_path / "state"))
    with Journal() as journal:
        yield journal


def values(host: SysTree) -> list[object]:
    tunables = Tunables(host.root)
    return [tunables.read(key, target) for key, target in SETTINGS]


def test_apply_then_restore(host: SysTree, journal: Journal) -> None:
    before = values(host)
    engine = TunableEngine(host.root, journal)
    applied = engine.apply(SETTINGS)
    # Readahead goes last (apply_rank): a later write of a limit could move it.
    order = [1, 2, 3, 0]
    assert [a.actual for a in applied] == [40, (4096, 87380, 16777216), 2, 4096]
    assert [a.original for a in applied] == [before[i] for i in order]
    assert not any(a.adjusted for a in applied)
    assert values(host) == [4096, 40, (4096, 87380, 16777216), 2]
    restored = engine.restore()
    assert [r.key for r in restored] == [a.key for a in reversed(applied)], "newest first"
    assert values(host) == before
    (session,) = journal.sessions()
    changes = journal.changes(session.id)
    assert [c.target for c in changes] == ["host", "host", "loop3", "loop3"]
    assert all(c.written_at and c.restored_at and c.outcome == "restored" for c in changes)
    assert changes[1].new == (4096, 87380, 16777216)


def test_the_context_manager_restores_on_an_exception(host: SysTree, journal: Journal) -> None:
    before = values(host)
    with pytest.raises(RuntimeError), TunableEngine(host.root, journal) as engine:
        engine.apply(SETTINGS)
        raise RuntimeError("trial crashed")
    assert values(host) == before
    assert journal.open_changes() == []
    assert journal.sessions()[0].ended is not None


def test_an_invalid_batch_writes_and_journals_nothing(host: SysTree, journal: Journal) -> None:
    before = values(host)
    engine = TunableEngine(host.root, journal)
    with pytest.raises(InvalidValue, match=r"block\.nr_requests on loop3: 512 exceeds 128"):
        engine.apply({**SETTINGS, ("block.nr_requests", "loop3"): 512})
    assert values(host) == before
    assert journal.sessions() == []


def test_both_halves_of_a_dirty_pair_are_refused(host: SysTree, journal: Journal) -> None:
    with pytest.raises(InvalidValue, match=r"set either vm\.dirty_bytes or vm\.dirty_ratio"):
        TunableEngine(host.root, journal).apply(
            {("vm.dirty_bytes", "host"): 1 << 28, ("vm.dirty_ratio", "host"): 10}
        )


def test_every_original_is_journaled_before_the_first_write(
    host: SysTree, journal: Journal
) -> None:
    """The third write fails (an immutable file: EPERM even for root). By then the journal
    held all four originals; the two written were restored, readahead (last) never written."""
    before = values(host)
    immutable = host.root / "sys/block/loop3/queue/nomerges"
    if subprocess.run(["chattr", "+i", str(immutable)], capture_output=True).returncode != 0:
        pytest.skip("needs chattr +i (root, on a file system that has it) to refuse a write")
    try:
        with pytest.raises(TunableError) as err:
            TunableEngine(host.root, journal).apply(SETTINGS)
    finally:
        subprocess.run(["chattr", "-i", str(immutable)], check=True)
    assert str(err.value) == (
        "block.nomerges on loop3: not permitted here (EPERM writing "
        "/sys/block/loop3/queue/nomerges)"
    )
    assert values(host) == before
    changes = journal.changes(journal.sessions()[0].id)
    assert [c.saved.original for c in changes] == [before[i] for i in (1, 2, 3, 0)]
    assert [c.written_at is not None for c in changes] == [True, True, False, False]
    assert all(c.restored_at for c in changes)


def test_keep_leaves_values_in_place_and_out_of_recovery(host: SysTree, journal: Journal) -> None:
    with TunableEngine(host.root, journal) as engine:
        engine.apply({("vm.dirty_ratio", "host"): 40})
        engine.keep()
    assert Tunables(host.root).read("vm.dirty_ratio", "host") == 40
    assert journal.open_changes() == []
    (change,) = journal.changes(journal.sessions()[0].id)
    assert change.kept_at and change.outcome == "kept"


def test_applying_one_key_twice_restores_the_first_original(host: SysTree) -> None:
    engine = TunableEngine(host.root, None)
    engine.apply({("block.read_ahead_kb", "loop3"): 256})
    engine.apply({("block.read_ahead_kb", "loop3"): 512})
    assert engine.changed == [("block.read_ahead_kb", "loop3")] * 2
    engine.restore()
    assert Tunables(host.root).read("block.read_ahead_kb", "loop3") == 128
    assert engine.changed == []


def test_irq_policy_is_verified_against_its_layout(host: SysTree) -> None:
    with TunableEngine(host.root, None) as engine:
        (applied,) = engine.apply({("irq.affinity", "0000:41:00.0"): "local-node"})
        assert applied.requested == "local-node"
        assert applied.expected == applied.actual == "40:2 41:3 42:2"
        assert not applied.adjusted
    assert Tunables(host.root).read("irq.affinity", "0000:41:00.0") == "40:0-3 41:0-3 42:0-3"


def test_a_device_gone_before_restore_is_journaled_gone_not_a_failure(
    host: SysTree, journal: Journal
) -> None:
    """Its values went with it (a hot-unplugged disk, a removed loop device): the rest is
    restored, nothing is left open for a later rollback to write onto whatever next takes
    the name, and no error hides what ended the caller's work."""
    before = values(host)
    engine = TunableEngine(host.root, journal)
    engine.apply(SETTINGS)
    shutil.rmtree(host.root / "sys/block/loop3")
    restored = engine.restore()
    assert [r.key for r in restored] == ["net.ipv4.tcp_rmem", "vm.dirty_ratio"]
    assert sorted(engine.gone) == [("block.nomerges", "loop3"), ("block.read_ahead_kb", "loop3")]
    assert engine.changed == []
    tunables = Tunables(host.root)
    assert [tunables.read(k, t) for k, t in SETTINGS if t == "host"] == before[1:3]
    (session,) = journal.sessions()
    outcomes = {c.key: c.outcome for c in journal.changes(session.id)}
    assert outcomes == {"block.read_ahead_kb": "gone", "block.nomerges": "gone",
                        "vm.dirty_ratio": "restored", "net.ipv4.tcp_rmem": "restored"}  # fmt: skip
    assert journal.open_changes() == []


def test_a_device_whose_name_another_took_before_restore_is_left_to_it(
    host: SysTree, journal: Journal
) -> None:
    """loop3 detached mid-trial and attached again by someone else (losetup -f): the new
    device keeps what it has, the change is closed 'gone' (no later rollback writes it
    either), and the engine says why in one line per value."""
    attach(host, "loop3", 12)
    before = values(host)
    engine = TunableEngine(host.root, journal)
    engine.apply(SETTINGS)
    detach(host, "loop3", 13)
    attach(host, "loop3", 14, backing="/srv/someone-else.img")
    restored = engine.restore()
    assert [r.key for r in restored] == ["net.ipv4.tcp_rmem", "vm.dirty_ratio"]
    assert values(host) == [4096, *before[1:3], 2], "the new device's values untouched"
    assert sorted(engine.gone) == [("block.nomerges", "loop3"), ("block.read_ahead_kb", "loop3")]
    assert engine.replaced == [
        f"{key} on loop3: the device was replaced since the change (diskseq 12 then, 14 now): "
        "left as it is"
        for key in ("block.read_ahead_kb", "block.nomerges")
    ]
    (session,) = journal.sessions()
    assert {c.key: (c.outcome, c.saved.diskseq) for c in journal.changes(session.id)} == {
        "block.read_ahead_kb": ("gone", 12), "block.nomerges": ("gone", 12),
        "vm.dirty_ratio": ("restored", None), "net.ipv4.tcp_rmem": ("restored", None)}  # fmt: skip
    assert journal.open_changes() == []


def test_the_same_values_on_a_new_device_are_not_taken_for_restored(
    host: SysTree, journal: Journal
) -> None:
    """The new attachment happens to hold the originals: still another device's, so
    'gone', not 'restored'."""
    attach(host, "loop3", 12)
    engine = TunableEngine(host.root, journal)
    engine.apply({("block.read_ahead_kb", "loop3"): 4096})
    attach(host, "loop3", 14)
    Tunables(host.root).write("block.read_ahead_kb", "loop3", 128)
    assert engine.restore() == []
    assert engine.gone == [("block.read_ahead_kb", "loop3")]
    assert [c.outcome for c in journal.changes(journal.sessions()[0].id)] == ["gone"]


def test_a_loop_device_detached_and_left_free_gets_its_originals_back(
    host: SysTree, journal: Journal
) -> None:
    """Detached, nobody's: its queue goes to whoever attaches next, so it gets back what
    was found (a loop device keeps its settings between attachments)."""
    attach(host, "loop3", 12)
    before = values(host)
    engine = TunableEngine(host.root, journal)
    engine.apply(SETTINGS)
    detach(host, "loop3", 13)
    assert len(engine.restore()) == 4
    assert values(host) == before
    assert engine.gone == engine.replaced == []


def test_without_a_diskseq_restore_goes_by_name_as_before(host: SysTree, journal: Journal) -> None:
    """A kernel before 5.15 numbers no attachment: nothing to compare, the name decides."""
    before = values(host)
    engine = TunableEngine(host.root, journal)
    engine.apply(SETTINGS)
    assert {c.saved.diskseq for c in journal.changes(journal.sessions()[0].id)} == {None}
    assert len(engine.restore()) == 4
    assert values(host) == before
