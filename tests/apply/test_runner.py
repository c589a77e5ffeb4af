"""The runner's command line, its hermetic environment, and reading the JSON callback's output.

The end-to-end runs are in test_role.py and test_role_fixture.py; these check the pieces on
their own, without running Ansible (the document here has the callback's shape, with the
results ansible-playbook 2.19 gave for a loop task that failed on one item).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tuner.apply.outcome import outcome
from tuner.apply.runner import (
    AnsibleMissing,
    PlaybookError,
    ansible_playbook,
    apply_command,
    environment,
    parse_run,
)
from tuner.errors import BadInput
from tuner.resources import playbooks_dir

DOCUMENT = {
    "plays": [{"name": "Apply an iotuner plan", "tasks": [
        {"name": "iotuner_apply : Read, validate and render the plan", "action": "iotuner_plan",
         "handler": False, "hosts": {"localhost": {"changed": False, "files": [
             {"path": "/c/etc/udev/rules.d/60-iotuner.rules", "before": "absent",
              "after": "4 lines, 0644", "differs": True}],
             "live": [{"key": "block.read_ahead_kb", "target": "loop3", "before": "128",
                       "after": "4092", "differs": True},
                      {"key": "block.nr_requests", "target": "loop3", "before": "128",
                       "after": "64", "differs": True}]}}},
        {"name": "iotuner_apply : Journal the managed files and live values as they are now",
         "action": "iotuner_journal", "handler": False,
         "hosts": {"localhost": {"changed": False, "state": "begin", "apply_id": 7}}},
        {"name": "iotuner_apply : Write managed files", "action": "ansible.builtin.copy",
         "handler": False, "hosts": {"localhost": {"changed": True, "msg": "All items completed",
             "results": [{"_ansible_item_label": "/c/etc/udev/rules.d/60-iotuner.rules",
                          "item": {"path": "/c/etc/udev/rules.d/60-iotuner.rules"},
                          "changed": True, "diff": [{"before": "", "after": "x\n"}]}]}}},
        {"name": "iotuner_apply : Set live values", "action": "iotuner_tunable", "handler": False,
         "hosts": {"localhost": {"changed": True, "failed": True,
             "msg": "One or more items failed", "results": [
                 {"_ansible_item_label": "block.read_ahead_kb on loop3", "changed": True,
                  "item": {"key": "block.read_ahead_kb", "target": "loop3"},
                  "diff": {"before": "128\n", "after": "4092\n"}},
                 {"_ansible_item_label": "block.nr_requests on loop3", "changed": False,
                  "failed": True, "item": {"key": "block.nr_requests", "target": "loop3"},
                  "msg": "block.nr_requests on loop3: not permitted here (EROFS ...)"}]}}},
        {"name": "iotuner_apply : Put back every file and value the change set saved",
         "action": "iotuner_journal", "handler": False, "hosts": {"localhost": {
             "changed": False, "state": "undo", "apply_id": 7, "problems": []}}},
        {"name": "iotuner_apply : Fail with the original error", "action": "ansible.builtin.fail",
         "handler": False, "hosts": {"localhost": {"failed": True, "msg": "Set live values: "
             "block.nr_requests on loop3: not permitted here (EROFS ...); everything put back "
             "as it was"}}},
    ]}],
    "stats": {"localhost": {"changed": 2, "failures": 1, "ignored": 0, "ok": 4, "rescued": 1,
                            "skipped": 0, "unreachable": 0}},
}  # fmt: skip


def test_a_run_is_read_per_task_and_loop_item() -> None:
    # A warning ansible printed on stdout before the document does not get in the way.
    stdout = "[WARNING]: something\n" + json.dumps(DOCUMENT) + "\n"
    run = parse_run(stdout, 2, "", ["ansible-playbook"])
    assert not run.ok and run.changed == 2
    assert run.recap[0].line() == (
        "localhost  ok=4 changed=2 unreachable=0 failed=1 skipped=0 rescued=1 ignored=0"
    )
    live = run.of_action("iotuner_tunable")
    assert [(t.item, t.status) for t in live] == [
        ("block.read_ahead_kb on loop3", "changed"),
        ("block.nr_requests on loop3", "failed"),
    ]
    assert live[0].diff == ({"before": "128\n", "after": "4092\n"},)
    assert live[0].task == "Set live values" and live[0].role == "iotuner_apply"
    assert [t.action for t in run.failures()] == ["iotuner_tunable", "ansible.builtin.fail"]
    assert run.of_action("copy")[0].diff == ({"before": "", "after": "x\n"},)


def test_the_outcome_joins_rows_with_what_the_tasks_did() -> None:
    result = outcome(parse_run(json.dumps(DOCUMENT), 2), check=False)
    assert result.status == "rolled back" and result.apply_id == 7
    assert result.error is not None and result.error.endswith("everything put back as it was")
    assert [(r.name, r.status) for r in result.rows] == [
        ("/c/etc/udev/rules.d/60-iotuner.rules", "undone"),
        ("block.read_ahead_kb", "undone"),
        ("block.nr_requests", "failed"),
    ]


def test_no_document_is_a_one_line_error() -> None:
    stderr = "Traceback...\nansible.errors.AnsibleError: the role 'x' was not found\n"
    with pytest.raises(PlaybookError, match=r"the role 'x' was not found$"):
        parse_run("", 1, stderr)


def test_the_environment_is_hermetic(tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin", "ANSIBLE_STDOUT_CALLBACK": "yaml", "ANSIBLE_BECOME": "True",
            "PYTHONPATH": "/elsewhere"}  # fmt: skip
    env = environment(tmp_path, base)
    assert "ANSIBLE_BECOME" not in env and env["ANSIBLE_STDOUT_CALLBACK"] == "iotuner_json"
    assert env["ANSIBLE_CONFIG"] == str(tmp_path / "ansible" / "ansible.cfg")
    assert (tmp_path / "ansible" / "ansible.cfg").is_file()
    assert env["ANSIBLE_LOCAL_TEMP"] == env["ANSIBLE_REMOTE_TEMP"] == str(tmp_path / "ansible/tmp")
    assert env["ANSIBLE_RETRY_FILES_ENABLED"] == "False" and env["ANSIBLE_NOCOWS"] == "True"
    assert env["ANSIBLE_CALLBACK_PLUGINS"] == str(playbooks_dir() / "callback_plugins")
    assert env["IOTUNER_STATE_DIR"] == str(tmp_path)
    # The modules import the tuner running now, ahead of anything on the caller's path.
    repo = str(Path(__file__).resolve().parents[2])
    assert env["PYTHONPATH"].split(":") == [repo, "/elsewhere"]


def test_the_command_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    command = apply_command(plan, check=True, diff=True, conf_root=tmp_path, state=tmp_path)
    assert command[1:6] == ["-i", "localhost,", "-c", "local",
                            str(playbooks_dir() / "apply.yml")]  # fmt: skip
    # The variables are data in a file, each one !unsafe: Ansible never templates them.
    variables = Path(command[command.index("-e") + 1].removeprefix("@"))
    assert variables == tmp_path / "ansible" / "vars.yml"
    assert variables.stat().st_mode & 0o777 == 0o600
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_constructor(
        "!unsafe", lambda loader, node: ("unsafe", loader.construct_scalar(node))
    )
    extra = yaml.load(variables.read_text(), Loader=loader)
    assert extra == {k: ("unsafe", v) for k, v in {
        "iotuner_plan": str(plan), "iotuner_conf_root": str(tmp_path), "iotuner_sys_root": "/",
        "iotuner_state_dir": str(tmp_path), "iotuner_replace": "false",
        "ansible_python_interpreter": sys.executable,
    }.items()}  # fmt: skip
    assert command[-2:] == ["--check", "--diff"]


def test_a_missing_ansible_playbook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("IOTUNER_ANSIBLE_PLAYBOOK", str(tmp_path / "ansible-playbook"))
    with pytest.raises(AnsibleMissing, match="no such executable"):
        ansible_playbook()
    monkeypatch.delenv("IOTUNER_ANSIBLE_PLAYBOOK")
    assert Path(ansible_playbook()).name == "ansible-playbook"


def test_a_path_ansible_would_expand_is_refused(tmp_path: Path) -> None:
    # copy's dest and file's path expand $VAR: the file written would not be the one rendered.
    with pytest.raises(BadInput, match=r"must not hold '\$'"):
        apply_command(tmp_path / "plan.yaml", conf_root=tmp_path / "$HOME", state=tmp_path)


# -- an untrusted IOTUNER_STATE_DIR (issue 27) -------------------------------------------------


def _check_plan(tmp_path: Path) -> tuple[Path, Path]:
    from tests.apply.applylab import sysctl_entry, write_plan

    conf = tmp_path / "conf"
    conf.mkdir()
    return write_plan(tmp_path / "plan.yaml", [sysctl_entry()]), conf


def test_an_untrusted_state_dir_gets_nothing_written(tmp_path: Path) -> None:
    # vars.yml was written into IOTUNER_STATE_DIR/ansible before the state directory was
    # checked: a state directory under a directory anybody may write got root's files.
    import os

    from tests.cli import iotuner

    plan, conf = _check_plan(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # not sticky: anybody may rename what is in it
    state = shared / "state"
    done = iotuner("apply", str(plan), "--check", "--conf-root", str(conf), state=state)
    assert done.returncode == 2, done.stderr
    assert f"{shared}: writable by others" in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert not os.path.lexists(state / "ansible" / "vars.yml")


def test_a_new_state_dir_and_its_missing_parents_are_0700(tmp_path: Path) -> None:
    from tests.cli import iotuner

    plan, conf = _check_plan(tmp_path)
    state = tmp_path / "new" / "state"
    done = iotuner("apply", str(plan), "--check", "--conf-root", str(conf), state=state)
    assert done.returncode in (0, 1), done.stderr
    for made in (tmp_path / "new", state, state / "ansible"):
        assert made.stat().st_mode & 0o777 == 0o700, made
    assert (state / "ansible" / "vars.yml").stat().st_mode & 0o777 == 0o600


def test_an_ansible_cfg_where_the_user_runs_apply_is_not_read(tmp_path: Path) -> None:
    # ansible-playbook reads ./ansible.cfg: run from a shared directory, one planted there
    # would set its log path (or plugins) for root. It runs from the state directory, with
    # ANSIBLE_CONFIG naming iotuner's own.
    import os
    import subprocess

    plan, conf = _check_plan(tmp_path)
    shared, marker = tmp_path / "shared", tmp_path / "MARKER"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "ansible.cfg").write_text(f"[defaults]\nlog_path = {marker}\n")
    worktree = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(worktree), "IOTUNER_STATE_DIR": str(tmp_path / "s")}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tuner.cli", "apply", str(plan), "--check", "--conf-root",
         str(conf)],
        cwd=shared, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert not marker.exists()
