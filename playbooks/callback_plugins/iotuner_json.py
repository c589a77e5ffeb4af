"""A stdout callback printing the whole run as one JSON document when the play ends.

ansible-core ships no JSON stdout callback (ansible.posix has one, and iotuner needs no
collection), so `iotuner apply` uses this one: ANSIBLE_CALLBACK_PLUGINS points at this
directory and ANSIBLE_STDOUT_CALLBACK=iotuner_json. The document is

    {"plays": [{"name": ..., "tasks": [{"name": ..., "action": ..., "handler": false,
                                        "hosts": {"localhost": {...the task's result...}}}]}],
     "stats": {"localhost": {"ok": 5, "changed": 2, "failures": 0, ...}}}

Each host result is the module's return (loop tasks keep theirs per item under "results"),
with `invocation` dropped and no_log results censored.
"""

from __future__ import annotations

import json
from typing import Any

from ansible.module_utils.common.json import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: iotuner_json
type: stdout
short_description: the run as one JSON document, for iotuner apply
description:
  - Prints plays, tasks with each host's result, and the recap as one JSON document at the end.
"""

_KEEP_PRIVATE = ("_ansible_item_label", "_ansible_no_log")


def _clean(result: Any) -> Any:
    """The result without invocation and ansible's private keys; no_log results censored."""
    if not isinstance(result, dict):
        return result
    if result.get("_ansible_no_log"):
        return {
            "censored": "hidden: no_log was set for this result",
            **{k: result[k] for k in ("changed", "failed", "skipped") if k in result},
        }
    cleaned = {
        key: value
        for key, value in result.items()
        if key != "invocation" and (not key.startswith("_ansible") or key in _KEEP_PRIVATE)
    }
    if isinstance(cleaned.get("results"), list):
        cleaned["results"] = [_clean(item) for item in cleaned["results"]]
    return cleaned


def _parts(result: Any) -> tuple[Any, Any, dict[str, Any]]:
    """(host, task, result dict) of a callback's task result, on ansible-core 2.15 to 2.19+."""
    # 2.19 added the public host/task/result properties and deprecated the underscored ones.
    host = getattr(result, "host", None) or result._host
    task = getattr(result, "task", None) or result._task
    data = result.result if hasattr(type(result), "result") else result._result
    return host, task, dict(data)


class CallbackModule(CallbackBase):  # type: ignore[misc]
    """Collects every task result and prints the document in v2_playbook_on_stats."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "iotuner_json"

    def __init__(self, display: Any = None) -> None:
        super().__init__(display)
        self.plays: list[dict[str, Any]] = []

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self.plays.append({"name": play.get_name(), "tasks": []})

    def _start(self, task: Any, handler: bool) -> None:
        if not self.plays:
            self.plays.append({"name": "", "tasks": []})
        self.plays[-1]["tasks"].append(
            {
                "name": task.get_name(),
                "action": task.action,
                "handler": handler,
                "uuid": str(task._uuid),
                "hosts": {},
            }
        )

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._start(task, handler=False)

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._start(task, handler=True)

    def _record(self, result: Any, **flags: bool) -> None:
        host, task, data = _parts(result)
        data.update(flags)
        uuid = str(task._uuid)
        # A result belongs to the newest task entry with its uuid (handlers can run twice).
        for play in reversed(self.plays):
            for entry in reversed(play["tasks"]):
                if entry["uuid"] == uuid:
                    entry["hosts"][host.get_name()] = _clean(data)
                    return

    def v2_runner_on_ok(self, result: Any) -> None:
        self._record(result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._record(result, unreachable=True)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        recap = {host: stats.summarize(host) for host in sorted(stats.processed)}
        for play in self.plays:
            for entry in play["tasks"]:
                entry.pop("uuid", None)
        document = {"plays": self.plays, "stats": recap}
        self._display.display(json.dumps(document, cls=AnsibleJSONEncoder, sort_keys=True))
