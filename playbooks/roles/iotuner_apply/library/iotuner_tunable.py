#!/usr/bin/python
"""Ansible module: hold one iotuner tunable at a value, live (no persistence)."""

from __future__ import annotations

from pathlib import Path

from ansible.module_utils.iotuner_guard import TunerImports, error_line

IOTUNER = TunerImports()
with IOTUNER:
    from tuner.tunables.access import Tunables, as_value, format_value, like_reading
    from tuner.tunables.base import TunableError

DOCUMENTATION = r"""
module: iotuner_tunable
short_description: Set one iotuner tunable live when it differs
description:
  - Reads the key on its target through iotuner's tunables (C(/sys/block/*/queue), C(/proc/sys),
    ...), compares it with what the kernel should read back, and writes only when it differs.
  - Supports check mode and diff (before and after). A value the kernel reads back otherwise
    than expected fails the task.
options:
  key:
    description: A key of iotuner's registry (C(block.read_ahead_kb), C(vm.dirty_ratio), ...).
    type: str
    required: true
  target:
    description: Its target (a block device's kernel name, an interface, C(host), ...).
    type: str
    required: true
  value:
    description: The value to write (a list for a triple such as tcp_rmem).
    type: raw
    required: true
  expected:
    description: What reading back should give (the kernel rounds some values); defaults to
      value.
    type: raw
  root:
    description: Root of the C(/sys) and C(/proc) to use (C(/) live).
    type: str
    default: /
author: iotuner developers
"""

EXAMPLES = r"""
- name: Readahead of loop3
  iotuner_tunable:
    key: block.read_ahead_kb
    target: loop3
    value: 4096
"""

RETURN = r"""
before:
  description: The value before, as text.
  returned: always
  type: str
after:
  description: The value after (in check mode, what it would be), as text.
  returned: always
  type: str
"""


def main():
    """Read, compare, write when different, read back."""
    module = IOTUNER.module(
        argument_spec={
            "key": {"type": "str", "required": True},
            "target": {"type": "str", "required": True},
            "value": {"type": "raw", "required": True},
            "expected": {"type": "raw"},
            "root": {"type": "str", "default": "/"},
        },
        supports_check_mode=True,
    )
    key, target = module.params["key"], module.params["target"]
    shown = f"{key} on {target}"
    tunables = Tunables(Path(module.params["root"]))
    try:
        value = as_value(module.params["value"])
        raw_expected = module.params["expected"]
        before = tunables.read(key, target)
        expected = like_reading(before, value if raw_expected is None else as_value(raw_expected))
        result = {
            "key": key,
            "target": target,
            "before": format_value(before),
            "after": format_value(before),
            "changed": before != expected,
        }
        if result["changed"]:
            result["after"] = format_value(expected)
            if module._diff:
                result["diff"] = {
                    "before_header": shown,
                    "after_header": shown,
                    "before": format_value(before) + "\n",
                    "after": format_value(expected) + "\n",
                }
            if not module.check_mode:
                tunables.write(key, target, value)
                actual = tunables.read(key, target)
                result["after"] = format_value(actual)
                if actual != expected:
                    module.fail_json(
                        msg=f"{shown}: wrote {format_value(value)} but it reads "
                        f"{format_value(actual)} (expected {format_value(expected)})",
                        **result,
                    )
    except (TunableError, ValueError) as err:
        module.fail_json(msg=error_line(shown, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
