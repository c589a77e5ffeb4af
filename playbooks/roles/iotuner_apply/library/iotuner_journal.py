#!/usr/bin/python
"""Ansible module: the journal of applies (tuner.apply.changeset) for the iotuner_apply role."""

from __future__ import annotations

from pathlib import Path

from ansible.module_utils.iotuner_guard import TunerImports

IOTUNER = TunerImports()
with IOTUNER:
    from tuner.apply import changeset
    from tuner.apply.compose import render_composed, union_text
    from tuner.errors import BadInput
    from tuner.state import state_dir
    from tuner.tunables.journal import Journal

DOCUMENTATION = r"""
module: iotuner_journal
short_description: Journal an iotuner apply, mark it done, or undo it
description:
  - C(begin) saves every managed file (bytes, mode, owner, link) and every live value the plan
    sets, in one durable commit to iotuner's state database, before the role writes anything.
  - C(applied) marks the change set applied, or C(unchanged) when no task changed anything.
  - C(undo) puts everything the change set saved back (files byte for byte, live values newest
    first); it reports problems instead of failing, so the role's rescue can still fail with the
    original error.
  - These tasks never report changed: they write iotuner's own bookkeeping, not the host's
    configuration, so a run that changes nothing reports changed=0.
options:
  state:
    description: What to do.
    type: str
    choices: [begin, applied, unchanged, undo]
    required: true
  plan:
    description: Path of the plan on the managed host (begin).
    type: str
  conf_root:
    description: Directory the managed files go below (begin).
    type: str
    default: /
  root:
    description: Root of the C(/sys) and C(/proc) the values live in (begin).
    type: str
    default: /
  replace:
    description: The plan is applied alone, not added to the plans in force (begin).
    type: bool
    default: false
  state_dir:
    description: iotuner's state directory; empty for its default (C(IOTUNER_STATE_DIR) or
      C(/var/lib/iotuner)).
    type: str
  apply_id:
    description: The change set (applied, unchanged, undo).
    type: int
author: iotuner developers
"""

EXAMPLES = r"""
- name: Journal what the plan will change
  iotuner_journal:
    state: begin
    plan: /root/plan.yaml
  register: journal
"""

RETURN = r"""
state:
  description: What was done (the state asked for).
  returned: always
  type: str
apply_id:
  description: The change set's id in the state database.
  returned: always
  type: int
problems:
  description: What undo could not put back, one line each (empty when all went back).
  returned: when state is undo
  type: list
  elements: str
"""


def journal_path(directory):
    """The state database in the given state directory, or in iotuner's default one."""
    return (Path(directory) if directory else state_dir()) / "state.db"


def begin(module, journal):
    """Render the plan again (the same inputs as iotuner_plan) and journal the host as it is."""
    params = module.params
    if not params["plan"]:
        module.fail_json(msg="state=begin needs plan")
    path = Path(params["plan"])
    try:
        composed, rendered, text = render_composed(
            path,
            database=journal.path,
            root=Path(params["root"]),
            conf_root=Path(params["conf_root"]),
            replace_all=params["replace"],
        )
    except (OSError, BadInput) as err:
        module.fail_json(msg=str(err))
    apply_id = changeset.begin(
        journal,
        rendered,
        plan_text=union_text(composed),
        plan_path=str(path),
        root=Path(params["root"]),
        own_plan=text,
        members=composed.kept,
    )
    module.exit_json(changed=False, state="begin", apply_id=apply_id)


def main():
    """Begin, finish or undo a change set."""
    module = IOTUNER.module(
        argument_spec={
            "state": {
                "type": "str",
                "required": True,
                "choices": ["begin", "applied", "unchanged", "undo"],
            },
            "plan": {"type": "str"},
            "conf_root": {"type": "str", "default": "/"},
            "root": {"type": "str", "default": "/"},
            "state_dir": {"type": "str"},
            "apply_id": {"type": "int"},
            "replace": {"type": "bool", "default": False},
        },
        required_if=[
            ("state", "begin", ("plan",)),
            ("state", "applied", ("apply_id",)),
            ("state", "unchanged", ("apply_id",)),
            ("state", "undo", ("apply_id",)),
        ],
        supports_check_mode=True,
    )
    params = module.params
    if module.check_mode:
        # Check mode writes nothing to the host, so there is nothing to journal or undo.
        module.exit_json(changed=False, state=params["state"], apply_id=params["apply_id"] or 0)
    with Journal(journal_path(params["state_dir"]), command="ansible iotuner_apply") as journal:
        if params["state"] == "begin":
            begin(module, journal)
        apply_id = params["apply_id"]
        if params["state"] == "undo":
            problems = changeset.undo(journal, apply_id)
            module.exit_json(changed=False, state="undo", apply_id=apply_id, problems=problems)
        changeset.finish(journal, apply_id, params["state"])
        module.exit_json(changed=False, state=params["state"], apply_id=apply_id)


if __name__ == "__main__":
    main()
