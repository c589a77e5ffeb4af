"""Running the iotuner_apply role on this host with ansible-playbook, and reading its result.

    run = run_apply(Path("plan.yaml"), check=True, diff=True)
    run.recap[0].changed, [t for t in run.tasks if t.changed]

ansible-playbook runs as a subprocess against "localhost," with the local connection and the
python running iotuner as the modules' interpreter. Its environment is hermetic: no ANSIBLE_*
variable of the caller's is passed on, the configuration file is one written in the state
directory, temporary files stay below it, and no retry files, cows or colours. The stdout
callback is iotuner's own JSON one (playbooks/callback_plugins/iotuner_json.py: ansible-core
ships none), parsed here into one TaskResult per task and loop item, and the play recap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import tuner
from tuner.errors import BadInput, IotunerError
from tuner.outfile import write_file
from tuner.resources import playbooks_dir
from tuner.state import state_dir, state_path
from tuner.trust import private_dir

PLAYBOOK = "apply.yml"
CALLBACK = "iotuner_json"
PLAYBOOK_ENV = "IOTUNER_ANSIBLE_PLAYBOOK"
"""Names the ansible-playbook to run, instead of the one beside this python or on PATH."""

_CONFIG = """\
# Written by iotuner for the ansible-playbook runs of `iotuner apply`; rewritten every run.
# The settings are passed as ANSIBLE_* variables (tuner/apply/runner.py): this file only stands
# in for ~/.ansible.cfg and /etc/ansible/ansible.cfg, which must not change what apply does.
[defaults]
"""


class AnsibleMissing(IotunerError):
    """ansible-playbook is not installed where iotuner can find it; exit 1."""


class PlaybookError(IotunerError):
    """ansible-playbook ran but gave no result to read (a broken playbook, a crash); exit 1."""


@dataclass(frozen=True)
class TaskResult:
    """One task's result on one host; a loop task gives one per item."""

    task: str
    action: str
    host: str
    item: str | None
    changed: bool
    failed: bool
    skipped: bool
    msg: str
    diff: tuple[Mapping[str, Any], ...]
    data: Mapping[str, Any] = field(default_factory=dict)
    role: str = ""
    handler: bool = False

    @property
    def status(self) -> str:
        """failed, skipped, changed or ok, as the play recap counts them."""
        if self.failed:
            return "failed"
        if self.skipped:
            return "skipped"
        return "changed" if self.changed else "ok"


@dataclass(frozen=True)
class Recap:
    """A host's line of the play recap."""

    host: str
    ok: int
    changed: int
    unreachable: int
    failed: int
    skipped: int
    rescued: int
    ignored: int

    def line(self) -> str:
        """As ansible-playbook prints it: "localhost  ok=7 changed=2 unreachable=0 ..."."""
        return (
            f"{self.host}  ok={self.ok} changed={self.changed} unreachable={self.unreachable} "
            f"failed={self.failed} skipped={self.skipped} rescued={self.rescued} "
            f"ignored={self.ignored}"
        )


@dataclass(frozen=True)
class PlaybookRun:
    """What one ansible-playbook run did."""

    returncode: int
    tasks: tuple[TaskResult, ...]
    recap: tuple[Recap, ...]
    stderr: str = ""
    command: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the run ended without a failed or unreachable host."""
        return self.returncode == 0 and not any(r.failed or r.unreachable for r in self.recap)

    @property
    def changed(self) -> int:
        """Tasks that changed something, over all hosts (the recap's changed=)."""
        return sum(r.changed for r in self.recap)

    def of_action(self, *actions: str) -> list[TaskResult]:
        """The results of tasks running these modules ("iotuner_tunable", "copy", ...)."""
        wanted = set(actions) | {f"ansible.builtin.{a}" for a in actions}
        return [t for t in self.tasks if t.action in wanted]

    def failures(self) -> list[TaskResult]:
        """Every failed result, in the order they came."""
        return [t for t in self.tasks if t.failed]


def ansible_playbook() -> str:
    """The ansible-playbook to run: $IOTUNER_ANSIBLE_PLAYBOOK, the one installed beside this
    python (the same environment as iotuner), or the one on PATH; AnsibleMissing otherwise."""
    named = os.environ.get(PLAYBOOK_ENV)
    if named:
        if shutil.which(named) is None:
            raise AnsibleMissing(f"{PLAYBOOK_ENV}={named}: no such executable")
        return named
    beside = Path(sys.executable).parent / "ansible-playbook"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("ansible-playbook")
    if found is None:
        raise AnsibleMissing(
            "ansible-playbook not found: iotuner apply needs iotuner's 'apply' part "
            "(pip install 'iotuner[apply]', or ansible-core 2.15 or later on PATH)"
        )
    return found


def environment(state: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """ansible-playbook's environment: the caller's without ANSIBLE_*, plus iotuner's settings."""
    work = private_dir(state / "ansible", "ansible's directory")
    private_dir(work / "tmp", "ansible's temporary directory")
    config = write_file(work / "ansible.cfg", _CONFIG, what="ansible configuration")
    plays = playbooks_dir()
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith("ANSIBLE_")}  # fmt: skip
    # The modules import tuner: the copy running now, installed or a checkout.
    package_parent = str(Path(tuner.__file__).resolve().parent.parent)
    python_path = [package_parent, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(
        ANSIBLE_CONFIG=str(config),
        ANSIBLE_HOME=str(work),
        ANSIBLE_LOCAL_TEMP=str(work / "tmp"),
        ANSIBLE_REMOTE_TEMP=str(work / "tmp"),
        ANSIBLE_ROLES_PATH=str(plays / "roles"),
        ANSIBLE_CALLBACK_PLUGINS=str(plays / "callback_plugins"),
        ANSIBLE_STDOUT_CALLBACK=CALLBACK,
        ANSIBLE_RETRY_FILES_ENABLED="False",
        ANSIBLE_NOCOWS="True",
        ANSIBLE_NOCOLOR="True",
        ANSIBLE_DEPRECATION_WARNINGS="False",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_GATHERING="explicit",
        IOTUNER_STATE_DIR=str(state),
        PYTHONPATH=os.pathsep.join(dict.fromkeys(python_path)),
    )
    return env


class _Unsafe(str):
    """A value Ansible must take as it is: written `!unsafe "..."`."""


class _UnsafeDumper(yaml.SafeDumper):
    """SafeDumper that writes _Unsafe strings with Ansible's !unsafe tag."""


_UnsafeDumper.add_representer(
    _Unsafe, lambda dumper, text: dumper.represent_scalar("!unsafe", str(text), style='"')
)


def extra_vars_file(state: Path, extra: Mapping[str, str]) -> Path:
    """Write the play's variables to `state`/ansible/vars.yml, every value marked !unsafe.

    Ansible evaluates {{ }} in the variables it is given: a plan named
    `p{{ lookup('pipe', ...) }}.yaml` would run a command as root. Passed as data in a file,
    with each string !unsafe, a path is only ever a path.
    """
    work = private_dir(state / "ansible", "ansible's directory")
    path = work / "vars.yml"
    text = "# Written by iotuner for `iotuner apply`; rewritten every run.\n" + yaml.dump(
        {name: _Unsafe(value) for name, value in extra.items()},
        Dumper=_UnsafeDumper,
        sort_keys=False,
        allow_unicode=False,
        width=2**16,
    )
    return write_file(path, text, what="ansible variables")


def apply_command(
    plan: Path,
    *,
    check: bool = False,
    diff: bool = False,
    conf_root: Path = Path("/"),
    sys_root: Path = Path("/"),
    state: Path,
    playbook: str = PLAYBOOK,
    replace_all: bool = False,
) -> list[str]:
    """The ansible-playbook command line that applies `plan` to this host; its variables go in
    a file in the state directory (`extra_vars_file`), never on the command line."""
    extra = {
        "iotuner_plan": str(plan.resolve()),
        "iotuner_conf_root": str(conf_root.resolve()),
        "iotuner_sys_root": str(sys_root.resolve()),
        "iotuner_state_dir": str(state),
        "iotuner_replace": "true" if replace_all else "false",
        "ansible_python_interpreter": sys.executable,
    }
    for name, value in extra.items():
        # Ansible's path options (copy's dest, file's path) expand $VAR wherever they appear.
        if "$" in value or not value.isprintable():
            raise BadInput(f"{value[:80]!r}: a path for {name} must not hold '$' or a control "
                           "character (Ansible would expand or mangle it)")  # fmt: skip
    variables = extra_vars_file(state, extra)
    command = [ansible_playbook(), "-i", "localhost,", "-c", "local",
               str(playbooks_dir() / playbook), "-e", f"@{variables}"]  # fmt: skip
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    return command


def run_apply(
    plan: Path,
    *,
    check: bool = False,
    diff: bool = False,
    conf_root: Path = Path("/"),
    sys_root: Path = Path("/"),
    state: Path | None = None,
    timeout: float | None = None,
    replace_all: bool = False,
) -> PlaybookRun:
    """Run the apply playbook on this host and read what it did (`sys_root`: a fixture tree
    standing in for /sys and /proc, for tests). The plan is added to the plans in force;
    `replace_all`: it replaces them (tuner/apply/compose.py)."""
    # Checked (and created 0700) before anything is written in it: UntrustedState otherwise.
    where = state_dir(state_path() if state is None else state)
    try:
        private_dir(where / "ansible", "ansible's directory")
        env = environment(where)
    except OSError as err:
        raise IotunerError(
            f"cannot use the state directory {where}: {err.strerror or err} "
            "(IOTUNER_STATE_DIR names another)"
        ) from None
    command = apply_command(plan, check=check, diff=diff, conf_root=conf_root,
                            sys_root=sys_root, state=where, replace_all=replace_all)  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=where / "ansible",
            timeout=timeout, check=False,
        )  # fmt: skip
    except OSError as err:
        raise AnsibleMissing(f"cannot run {command[0]}: {err.strerror or err}") from None
    return parse_run(done.stdout, done.returncode, done.stderr, command)


def parse_run(
    stdout: str, returncode: int, stderr: str = "", command: Sequence[str] = ()
) -> PlaybookRun:
    """Read the JSON callback's document; PlaybookError when there is none."""
    document = _document(stdout)
    if document is None:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit status {returncode}, nothing on stdout"
        raise PlaybookError(f"ansible-playbook gave no result: {why}")
    tasks: list[TaskResult] = []
    for play in document.get("plays", []):
        for task in play.get("tasks", []):
            for host, result in task.get("hosts", {}).items():
                tasks.extend(_results(task, host, result))
    recap = tuple(
        Recap(host, s.get("ok", 0), s.get("changed", 0), s.get("unreachable", 0),
              s.get("failures", 0), s.get("skipped", 0), s.get("rescued", 0),
              s.get("ignored", 0))
        for host, s in sorted(document.get("stats", {}).items())
    )  # fmt: skip
    return PlaybookRun(returncode, tuple(tasks), recap, stderr, tuple(command))


def _document(stdout: str) -> dict[str, Any] | None:
    """The callback's document: the JSON object starting a line (warnings may precede it)."""
    decoder = json.JSONDecoder()
    offset = 0
    for line in stdout.splitlines(keepends=True):
        if line.startswith("{"):
            try:
                found, _ = decoder.raw_decode(stdout, offset)
            except ValueError:
                found = None
            if isinstance(found, dict) and "plays" in found:
                return found
        offset += len(line)
    return None


def _results(task: Mapping[str, Any], host: str, result: Mapping[str, Any]) -> list[TaskResult]:
    role, _, name = str(task.get("name", "")).rpartition(" : ")
    common = {"task": name, "action": str(task.get("action", "")), "host": host,
              "role": role, "handler": bool(task.get("handler"))}  # fmt: skip
    items = result.get("results")
    if isinstance(items, list) and items:
        return [_one(common, item, _label(item)) for item in items if isinstance(item, dict)]
    return [_one(common, result, None)]


def _one(common: Mapping[str, Any], result: Mapping[str, Any], item: str | None) -> TaskResult:
    diff = result.get("diff") or ()
    diffs = tuple(d for d in ([diff] if isinstance(diff, dict) else diff) if isinstance(d, dict))
    data = {k: v for k, v in result.items() if k not in ("diff", "results")}
    return TaskResult(
        item=item,
        changed=bool(result.get("changed")),
        failed=bool(result.get("failed")) or bool(result.get("unreachable")),
        skipped=bool(result.get("skipped")),
        msg=str(result.get("msg") or ""),
        diff=diffs,
        data=data,
        **common,
    )


def _label(item: Mapping[str, Any]) -> str:
    label = item.get("_ansible_item_label", item.get("item"))
    return label if isinstance(label, str) else json.dumps(label, sort_keys=True)
