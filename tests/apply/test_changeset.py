"""The journal of applies: originals saved before any write, put back byte for byte."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apply.hosts import BACKING, identity_host
from tests.cli import iotuner
from tests.fixtures.journal_v1 import write_journal_v1
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import attach, detach
from tuner.apply import changeset
from tuner.apply.render import SYSCTL_CONF, UDEV_RULES, Rendered, render
from tuner.plan import Plan, PlanEntry
from tuner.tunables.access import Tunables
from tuner.tunables.journal import Journal

REPO = Path(__file__).resolve().parents[2]
PLAN = Plan(1, "2026-11-22T07:10:00+00:00", "storage01", "advise", "stream-read",
            (PlanEntry("block.scheduler", "loop3", "mq-deadline"),
             PlanEntry("block.nr_requests", "loop3", 512),
             PlanEntry("vm.dirty_background_ratio", "host", 5)))  # fmt: skip
# Bytes no text round trip would keep: no final newline, a tab, a byte that is not UTF-8.
OLD_SYSCTL = b"# the admin's own\nvm.swappiness\t= 1\n\xff"


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    return identity_host(tree)


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "conf"
    (path / SYSCTL_CONF).parent.mkdir(parents=True)
    (path / SYSCTL_CONF).write_bytes(OLD_SYSCTL)
    os.chmod(path / SYSCTL_CONF, 0o600)
    return path


def write_all(rendered: Rendered, root: Path) -> None:
    """What the role does, done directly."""
    for f in rendered.files:
        if f.content is not None:
            Path(f.path).parent.mkdir(parents=True, exist_ok=True)
            Path(f.path).write_text(f.content)
            os.chmod(f.path, f.mode)
    tunables = Tunables(root)
    for s in rendered.live:
        tunables.write(s.key, s.target, s.value)


def live(root: Path) -> list[object]:
    tunables = Tunables(root)
    return [tunables.read(k, t) for k, t in (("block.scheduler", "loop3"),
            ("block.nr_requests", "loop3"), ("vm.dirty_background_ratio", "host"))]  # fmt: skip


def test_undo_restores_files_byte_for_byte_and_live_values(
    host: SysTree, conf: Path, state: Path
) -> None:
    rendered = render(PLAN, root=host.root, conf_root=conf)
    before = live(host.root)
    with Journal(state / "state.db") as journal:
        apply_id = changeset.begin(journal, rendered, plan_text="p", plan_path="p.yaml",
                                   root=host.root)  # fmt: skip
        write_all(rendered, host.root)
        changeset.finish(journal, apply_id, "applied")
        assert live(host.root) == ["mq-deadline", 512, 5]
        assert (conf / UDEV_RULES).exists()
        assert changeset.undo(journal, apply_id) == []
        (record,) = changeset.history(journal)
    assert live(host.root) == before == ["none", 128, 10]
    assert (conf / SYSCTL_CONF).read_bytes() == OLD_SYSCTL
    assert (conf / SYSCTL_CONF).stat().st_mode & 0o777 == 0o600
    assert not (conf / UDEV_RULES).exists(), "a file the apply created is removed"
    assert record.status == "rolled-back" and record.rolled_back_at is not None


def test_history_lists_applies_newest_first_with_what_they_wrote(
    host: SysTree, conf: Path, state: Path
) -> None:
    rendered = render(PLAN, root=host.root, conf_root=conf)
    with Journal(state / "state.db") as journal:
        first = changeset.begin(journal, rendered, plan_text="p", plan_path="a.yaml",
                                root=host.root)  # fmt: skip
        changeset.finish(journal, first, "applied")
        second = changeset.begin(journal, rendered, plan_text="p", plan_path="b.yaml",
                                 root=host.root)  # fmt: skip
        changeset.finish(journal, second, "unchanged")
        records = changeset.history(journal)
    assert [(r.id, r.status, r.plan_path) for r in records] == [
        (second, "unchanged", "b.yaml"), (first, "applied", "a.yaml")]  # fmt: skip
    assert records[0].files == (str(conf / UDEV_RULES), str(conf / SYSCTL_CONF))


def test_a_pending_apply_is_left_alone_while_its_process_lives(
    host: SysTree, conf: Path, state: Path
) -> None:
    rendered = render(PLAN, root=host.root, conf_root=conf)
    with Journal(state / "state.db") as journal:
        changeset.begin(journal, rendered, plan_text="p", plan_path="p.yaml", root=host.root,
                        owner_pid=os.getpid())  # fmt: skip
        write_all(rendered, host.root)
        assert changeset.recover_pending(journal) == []
    assert live(host.root) == ["mq-deadline", 512, 5]


def test_kill_9_in_the_middle_of_an_apply_is_undone_by_the_next_command(
    host: SysTree, conf: Path, state: Path
) -> None:
    before = live(host.root)
    env = {**os.environ, "IOTUNER_STATE_DIR": str(state)}
    command = [sys.executable, "-m", "tests.apply.apply_child", str(host.root), str(conf)]
    child = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    assert child.returncode == -9, child.stderr
    assert live(host.root)[:2] == ["mq-deadline", 512] and (conf / UDEV_RULES).exists()
    # A command that only reads says what is left and changes nothing (issue 30)...
    looked = iotuner("history", "--json", state=state)
    assert looked.returncode == 0, looked.stderr
    assert "left 0 value(s) and 1 apply(s) changed" in looked.stderr
    assert live(host.root)[:2] == ["mq-deadline", 512] and (conf / UDEV_RULES).exists()
    # ...the next command that changes the host undoes the interrupted apply first.
    undone = iotuner("lab", "down", state=state)
    assert "rolled back apply 1, interrupted before it finished" in undone.stderr, undone.stderr
    result = iotuner("history", "--json", state=state)
    assert result.returncode == 0, result.stderr
    assert live(host.root) == before
    assert not (conf / UDEV_RULES).exists()
    assert (conf / SYSCTL_CONF).read_bytes() == OLD_SYSCTL
    assert '"status": "rolled-back"' in result.stdout


def test_history_prints_paths_whole_and_one_time_format(
    host: SysTree, conf: Path, state: Path
) -> None:
    rendered = render(PLAN, root=host.root, conf_root=conf)
    long_plan = "/srv/" + "/".join(["plans-for-the-storage-fleet"] * 4) + "/plan.yaml"
    with Journal(state / "state.db") as journal:
        first = changeset.begin(journal, rendered, plan_text="p", plan_path=long_plan,
                                root=host.root)  # fmt: skip
        changeset.finish(journal, first, "applied")
        assert changeset.undo(journal, first) == []
    env = {**os.environ, "IOTUNER_STATE_DIR": str(state), "COLUMNS": "80"}
    result = subprocess.run([sys.executable, "-m", "tuner.cli", "history"], env=env,
                            capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"    plan {long_plan}" in lines
    assert f"    wrote {conf / UDEV_RULES}" in lines
    head = next(line for line in lines if line.startswith("#1 "))
    # Applied and rolled back, both as local 'YYYY-MM-DD HH:MM:SS' (no 'T', no UTC offset).
    assert re.fullmatch(r"#1  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  rolled back \d{4}-\d\d-\d\d "
                        r"\d\d:\d\d:\d\d", head), head  # fmt: skip


def test_undo_writes_nothing_onto_a_device_that_took_the_name(
    host: SysTree, conf: Path, state: Path
) -> None:
    """The apply's loop3 was detached and another file attached as loop3: its values are its
    own now; the undo says so for each and puts back the rest."""
    attach(host, "loop3", 12, backing=BACKING)
    rendered = render(PLAN, root=host.root, conf_root=conf)
    with Journal(state / "state.db") as journal:
        apply_id = changeset.begin(journal, rendered, plan_text="p", plan_path="p.yaml",
                                   root=host.root)  # fmt: skip
        write_all(rendered, host.root)
        changeset.finish(journal, apply_id, "applied")
        detach(host, "loop3", 13)
        attach(host, "loop3", 14, backing="/srv/someone-else.img")
        problems = changeset.undo(journal, apply_id)
    assert problems == [
        f"{key} on loop3: the device was replaced since the change (diskseq 12 then, 14 now): "
        "left as it is"
        for key in ("block.nr_requests", "block.scheduler")
    ]
    assert live(host.root) == ["mq-deadline", 512, 10]
    assert (conf / SYSCTL_CONF).read_bytes() == OLD_SYSCTL


def test_a_pending_apply_of_a_schema_1_journal_is_still_undone(host: SysTree, state: Path) -> None:
    """Journaled before apply_values kept a diskseq: the next command adds the column and
    undoes the set by name, as it did."""
    attach(host, "loop3", 12, backing=BACKING)
    Tunables(host.root).write("block.nr_requests", "loop3", 64)
    write_journal_v1(state / "state.db", host.root, [],
                     applied=[("block.nr_requests", "loop3", 128, 64)])  # fmt: skip
    result = iotuner("lab", "down", state=state)
    assert "iotuner: rolled back apply 1, interrupted before it finished" in result.stderr
    assert Tunables(host.root).read("block.nr_requests", "loop3") == 128
    with Journal(state / "state.db") as journal:
        rows = journal.db.execute("SELECT key, diskseq FROM apply_values").fetchall()
    assert rows == [("block.nr_requests", None)]


def test_a_restore_does_not_follow_a_link_planted_at_its_temporary(tmp_path: Path) -> None:
    # Issue 27: a file put back was written first to .NAME.iotuner-restore beside it with an
    # open that follows a link: one planted there (a --conf-root another user can write) made
    # root write the saved bytes into any file.
    from tuner.apply.changeset import MANAGED_FILES, SavedFile, restore_file

    rel = sorted(MANAGED_FILES)[0]
    path = tmp_path / "conf" / rel
    path.parent.mkdir(parents=True)
    path.write_text("iotuner's\n")
    victim = tmp_path / "victim"
    victim.write_text("the victim's own bytes\n")
    (path.parent / f".{path.name}.iotuner-restore").symlink_to(victim)
    saved = SavedFile(str(path), True, b"the admin's\n", 0o640, os.getuid(), os.getgid(), None)
    assert restore_file(saved)
    assert victim.read_text() == "the victim's own bytes\n"
    assert path.read_bytes() == b"the admin's\n" and not path.is_symlink()
    assert path.stat().st_mode & 0o777 == 0o640
