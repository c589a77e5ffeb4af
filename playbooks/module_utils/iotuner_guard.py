"""The iotuner modules' shared preamble: the guard around their `tuner` imports and the one
failure they all give when iotuner is not installed for the interpreter Ansible runs.

Beside the playbooks (playbooks/module_utils), so Ansible ships it with every module run from
apply.yml and fleet.yml, the role's modules included; imported as
`ansible.module_utils.iotuner_guard`.

    IOTUNER = TunerImports()
    with IOTUNER:
        from tuner.plan import read_plan

    def main():
        module = IOTUNER.module(argument_spec={...}, supports_check_mode=True)
"""

from __future__ import annotations

import sys
import traceback
from types import TracebackType
from typing import Any

from ansible.module_utils.basic import AnsibleModule


class TunerImports:
    """A `with` block around a module's `tuner` imports.

    An ImportError is kept, not raised: a module that cannot import iotuner must still start,
    so that it fails as an Ansible task saying what to do rather than as a Python traceback.
    """

    def __init__(self) -> None:
        self.error: str | None = None

    def __enter__(self) -> TunerImports:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if kind is None or not issubclass(kind, ImportError):
            return False
        self.error = "".join(traceback.format_exception(kind, value, tb))
        return True

    def module(self, **spec: Any) -> AnsibleModule:
        """AnsibleModule(**spec), failed at once when the `tuner` imports were not found."""
        module = AnsibleModule(**spec)
        if self.error is not None:
            module.fail_json(
                msg=f"iotuner is not installed for {sys.executable} (set "
                "ansible_python_interpreter to the python that has it)",
                exception=self.error,
            )
        return module


def error_line(shown: str, err: Exception) -> str:
    """One line for a failed read or write of `shown` ("block.scheduler on sdb"): iotuner's
    own errors already name the key and target; anything else gets them in front."""
    from tuner.tunables.base import TunableError

    return str(err) if isinstance(err, TunableError) else f"{shown}: {err}"
