"""`verify` runs pytest as root: never from, nor importing from, a directory another user can
write (issue 27).

`verify --keep DIR` ran pytest from DIR as it found it: a conftest.py (or a pytest.py, which
`python -m pytest` imports from its working directory) planted there by anybody ran as root.
`--keep` now takes a new directory (made 0700) or an existing empty one of root's or ours that
nobody else may write, under directories nobody else may swap; anything else is one line, exit 2,
and nothing runs. The directory the user runs iotuner from takes no part either.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import iotuner
from tuner.plan import Plan, PlanEntry, write_plan
from tuner.tunables.access import Tunables

WORKTREE = Path(__file__).resolve().parents[2]
KEY = "vm.dirty_expire_centisecs"


def plan_file(tmp_path: Path) -> Path:
    """A plan holding today's value of one sysctl: verify runs its suite (and exits 1: the
    managed file is missing under the empty --conf-root)."""
    plan = Plan(1, "2026-11-22T00:00:00+00:00", "vm", "advise", "stream-read",
                (PlanEntry(KEY, "host", Tunables().read(KEY, "host")),))  # fmt: skip
    path = tmp_path / "plan.yaml"
    write_plan(plan, path)
    (tmp_path / "conf").mkdir(exist_ok=True)
    return path


def plant_code(directory: Path, marker: Path) -> None:
    """What a hostile user leaves for pytest to import: each would write `marker` as root."""
    code = f"open({str(marker)!r}, 'w').write('ran as uid %d' % __import__('os').getuid())\n"
    for name in ("conftest.py", "pytest.py", "testinfra.py"):
        (directory / name).write_text(code)
    (directory / "pytest.ini").write_text("[pytest]\naddopts = -p conftest\n")
    # ansible reads ./ansible.cfg: a log_path there would make it write the marker.
    (directory / "ansible.cfg").write_text(f"[defaults]\nlog_path = {marker}\n")


def verify_keep(tmp_path: Path, keep: Path) -> subprocess.CompletedProcess[str]:
    plan = plan_file(tmp_path)
    return iotuner("verify", str(plan), "--conf-root", str(tmp_path / "conf"),
                   "--keep", str(keep), state=tmp_path / "state", timeout=120)  # fmt: skip


def one_line_exit_2(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    return done.stderr


def test_a_keep_directory_anybody_may_write_is_refused(tmp_path: Path) -> None:
    keep, marker = tmp_path / "shared", tmp_path / "MARKER"
    keep.mkdir()
    keep.chmod(0o1777)  # sticky or not: anybody may add a conftest.py
    plant_code(keep, marker)
    said = one_line_exit_2(verify_keep(tmp_path, keep))
    assert f"--keep {keep}" in said and "writable by others" in said
    assert not marker.exists()


def test_a_keep_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give files to another user")
    keep, marker = tmp_path / "theirs", tmp_path / "MARKER"
    keep.mkdir(mode=0o700)
    plant_code(keep, marker)
    uid = pwd.getpwnam("nobody").pw_uid
    os.chown(keep, uid, -1)
    said = one_line_exit_2(verify_keep(tmp_path, keep))
    assert f"owned by uid {uid}" in said
    assert not marker.exists()


def test_a_keep_directory_holding_other_files_is_refused(tmp_path: Path) -> None:
    keep, marker = tmp_path / "full", tmp_path / "MARKER"
    keep.mkdir(mode=0o700)
    plant_code(keep, marker)
    said = one_line_exit_2(verify_keep(tmp_path, keep))
    assert "new or empty directory" in said
    assert not marker.exists()


def test_a_keep_directory_named_through_a_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    said = one_line_exit_2(verify_keep(tmp_path, tmp_path / "link"))
    assert "symbolic link" in said
    assert list(real.iterdir()) == []


def test_a_keep_directory_under_one_anybody_may_swap_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # not sticky: the keep directory could be renamed away and replaced
    said = one_line_exit_2(verify_keep(tmp_path, shared / "kept"))
    assert f"{shared}: writable by others" in said
    assert not (shared / "kept").exists()


def test_a_new_keep_directory_is_0700_and_may_be_used_again(tmp_path: Path) -> None:
    keep = tmp_path / "new" / "kept"
    first = verify_keep(tmp_path, keep)
    assert first.returncode == 1, first.stderr  # the managed file is missing: a failed check
    assert keep.stat().st_mode & 0o777 == 0o700
    assert (keep / "test_iotuner_verify.py").is_file()
    again = verify_keep(tmp_path, keep)  # only what verify wrote there: used again
    assert again.returncode == 1, again.stderr


def test_the_directory_iotuner_runs_from_takes_no_part(tmp_path: Path) -> None:
    # The user runs `iotuner verify` from a shared directory holding a conftest.py, a
    # pytest.py, a pytest.ini and an ansible.cfg: none of them is read.
    cwd, marker = tmp_path / "shared", tmp_path / "MARKER"
    cwd.mkdir()
    cwd.chmod(0o1777)
    plant_code(cwd, marker)
    plan = plan_file(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(WORKTREE), "IOTUNER_STATE_DIR": str(tmp_path / "s")}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tuner.cli", "verify", str(plan), "--conf-root",
         str(tmp_path / "conf")],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert not marker.exists()
