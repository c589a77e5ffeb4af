#!/usr/bin/python
"""Ansible module: read, validate and render an iotuner plan on the managed host (read-only)."""

from __future__ import annotations

import os
from pathlib import Path

from ansible.module_utils.iotuner_guard import TunerImports

IOTUNER = TunerImports()
with IOTUNER:
    from tuner.apply.compose import render_composed
    from tuner.apply.render import rendered_document
    from tuner.errors import BadInput
    from tuner.state import state_path
    from tuner.tunables.access import Tunables, as_value, format_value
    from tuner.tunables.base import TunableError

NL = b"\n"

DOCUMENTATION = r"""
module: iotuner_plan
short_description: Read, validate and render an iotuner plan
description:
  - Reads the plan file on the managed host, validates every entry against the host (unknown
    tunable, missing device, a value the kernel refuses, a device without a stable identity) and
    renders the managed files and live values the role applies. Never writes; runs in check mode.
  - What is rendered is the union of the plans in force (read from the state database) and this
    one, a later entry for the same key and target winning; C(replace) renders this plan alone.
  - Fails with one line naming the plan entry at fault.
options:
  plan:
    description: Path of the plan on the managed host.
    type: str
    required: true
  conf_root:
    description: Directory the managed files go below (C(/) on a real host).
    type: str
    default: /
  root:
    description: Root of the C(/sys) and C(/proc) the values are read from (C(/) live).
    type: str
    default: /
  state_dir:
    description: iotuner's state directory, where the plans in force are journaled; empty for
      its default (C(IOTUNER_STATE_DIR) or C(/var/lib/iotuner)).
    type: str
  replace:
    description: Apply this plan alone, dropping the plans in force, instead of adding to them.
    type: bool
    default: false
author: iotuner developers
"""

EXAMPLES = r"""
- name: Render the plan
  iotuner_plan:
    plan: /root/plan.yaml
  register: rendered
"""

RETURN = r"""
files:
  description: Every managed file, with what it holds now (before) and what the plan wants.
  returned: always
  type: list
  elements: dict
live:
  description: Every live value in apply order, with its value now (before).
  returned: always
  type: list
  elements: dict
dirs:
  description: Directories of wanted files that do not exist yet.
  returned: always
  type: list
  elements: str
pending:
  description: How many files and values differ from what the plan wants.
  returned: always
  type: int
document:
  description: The rendered plan (tuner.apply.render.rendered_document).
  returned: always
  type: dict
holds:
  description: One line per plan the managed files hold, the new one last.
  returned: always
  type: list
  elements: str
"""


def describe_path(path):
    """What a managed path holds now, in a few words."""
    if os.path.islink(path):
        return "link -> " + os.readlink(path)
    if os.path.isdir(path):
        return "a directory"
    if not os.path.exists(path):
        return "absent"
    with open(path, "rb") as handle:
        data = handle.read()
    mode = os.stat(path).st_mode & 0o7777
    return f"{_lines(data.count(NL))}, {mode:04o}"


def describe_wanted(managed):
    """What the plan wants at a managed path, in the same words."""
    if managed.link is not None:
        return "link -> " + managed.link
    if managed.content is None:
        return "absent"
    return f"{_lines(managed.content.encode().count(NL))}, {managed.mode:04o}"


def _lines(count):
    return f"{count} line" + ("" if count == 1 else "s")


def differs(managed):
    """True when the path is not what the plan wants (what copy/file would change)."""
    path = managed.path
    if managed.link is not None:
        return not os.path.islink(path) or os.readlink(path) != managed.link
    if managed.content is None:
        return os.path.lexists(path)
    if os.path.islink(path) or not os.path.isfile(path):
        return True
    with open(path, "rb") as handle:
        if handle.read() != managed.content.encode():
            return True
    return os.stat(path).st_mode & 0o7777 != managed.mode


def state_of(managed):
    """The ansible.builtin.file/copy state that makes the path what the plan wants."""
    if managed.link is not None:
        return "link"
    return "absent" if managed.content is None else "file"


def file_row(managed):
    """One managed file as the role's tasks loop over it."""
    directory = os.path.dirname(managed.path)
    return {
        "path": managed.path,
        "state": state_of(managed),
        "content": managed.content,
        "mode": f"{managed.mode:04o}",
        "link": managed.link,
        "dir": directory,
        "dir_missing": state_of(managed) != "absent" and not os.path.isdir(directory),
        "before": describe_path(managed.path),
        "after": describe_wanted(managed),
        "differs": differs(managed),
    }


def plain(value):
    """A value as JSON holds it (a triple as a list)."""
    return list(value) if isinstance(value, tuple) else value


def live_row(tunables, setting):
    """One live value as the role's tasks loop over it."""
    try:
        now = tunables.read(setting.key, setting.target)
        before = format_value(now)
        same = now == as_value(plain(setting.expected))
    except TunableError as err:
        before, same = f"unreadable ({err})", False
    return {
        "entry": setting.entry,
        "key": setting.key,
        "target": setting.target,
        "value": plain(setting.value),
        "expected": plain(setting.expected),
        "path": setting.path,
        "before": before,
        "after": format_value(setting.expected),
        "differs": not same,
    }


def main():
    """Render the plan and return what the role applies."""
    module = IOTUNER.module(
        argument_spec={
            "plan": {"type": "str", "required": True},
            "conf_root": {"type": "str", "default": "/"},
            "root": {"type": "str", "default": "/"},
            "state_dir": {"type": "str"},
            "replace": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = module.params
    database = Path(params["state_dir"] or state_path()) / "state.db"
    try:
        composed, rendered, _ = render_composed(
            Path(params["plan"]),
            database=database,
            root=Path(params["root"]),
            conf_root=Path(params["conf_root"]),
            replace_all=params["replace"],
        )
    except BadInput as err:
        module.fail_json(msg=str(err))
    tunables = Tunables(Path(params["root"]))
    files = [file_row(f) for f in rendered.files]
    live = [live_row(tunables, s) for s in rendered.live]
    dirs = sorted({f["dir"] for f in files if f["dir_missing"]})
    module.exit_json(
        changed=False,
        files=files,
        live=live,
        dirs=dirs,
        pending=sum(1 for row in files + live if row["differs"]),
        document=rendered_document(rendered),
        holds=list(composed.holds()),
    )


if __name__ == "__main__":
    main()
