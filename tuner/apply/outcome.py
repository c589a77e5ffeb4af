"""What an apply run did, per managed file and live value, from the playbook's results.

The role's iotuner_plan task returns every managed file and live value with what it holds now
("before") and what the plan wants ("after"); the copy, file and iotuner_tunable tasks say
which of them changed. This joins the two into one row each, as `iotuner apply` shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.apply.runner import PlaybookRun, Recap, TaskResult

FILE_ACTIONS = ("copy", "file")


@dataclass(frozen=True)
class Row:
    """One managed file or live value: before -> after, and what the run did with it.

    status: ok (already so), changed, would change (check mode), failed, undone (changed,
    then put back after a later failure), not reached (a failure came first).
    """

    kind: str  # "file" or "value"
    name: str  # the file's path, or the tunable's key
    target: str  # the value's target; "" for a file
    before: str
    after: str
    status: str


@dataclass(frozen=True)
class Outcome:
    """The run as a whole.

    status: applied, unchanged (nothing needed changing), checked (check mode), rolled back
    (a task failed and everything was put back), failed (a failure before anything was
    journaled, or a rollback with problems).
    """

    status: str
    apply_id: int | None
    rows: tuple[Row, ...]
    recap: tuple[Recap, ...]
    error: str | None = None
    undo_problems: tuple[str, ...] = ()

    @property
    def pending(self) -> int:
        """Rows that changed or would change."""
        return sum(1 for r in self.rows if r.status in ("changed", "would change"))


def outcome(run: PlaybookRun, *, check: bool) -> Outcome:
    """Join the plan task's rows with the results of the tasks that wrote them."""
    plan = next((t for t in run.of_action("iotuner_plan") if not t.skipped), None)
    journal = [t for t in run.of_action("iotuner_journal") if not t.skipped]
    undo = next((t for t in journal if t.data.get("state") == "undo"), None)
    begun = next((t for t in journal if t.data.get("state") == "begin"), None)
    apply_id = _int(begun.data.get("apply_id")) if begun is not None else None
    problems = tuple(str(p) for p in (undo.data.get("problems") or ())) if undo else ()
    files = {_key(t, "path"): t for t in run.of_action(*FILE_ACTIONS) if _item(t).get("path")}
    values = {_key(t, "key", "target"): t for t in run.of_action("iotuner_tunable")}
    failed = not run.ok
    rows: list[Row] = []
    if plan is not None and not plan.failed:
        for f in plan.data.get("files", []):
            status = _status(files.get((f["path"],)), f, check, failed, undo is not None)
            rows.append(Row("file", f["path"], "", f["before"], f["after"], status))
        for v in plan.data.get("live", []):
            result = values.get((v["key"], v["target"]))
            status = _status(result, v, check, failed, undo is not None)
            rows.append(Row("value", v["key"], v["target"], v["before"], v["after"], status))
    if check:
        status = "failed" if failed else "checked"
    elif not failed:
        status = "applied" if run.changed else "unchanged"
    else:
        status = "rolled back" if undo is not None and not problems else "failed"
    error = _error(run) if failed else None
    return Outcome(status, apply_id, tuple(rows), run.recap, error, problems)


def _status(
    result: TaskResult | None, row: Mapping[str, Any], check: bool, failed: bool, undone: bool
) -> str:
    differs = bool(row.get("differs"))
    if result is None or result.skipped:
        # Check mode skips a file whose directory does not exist yet: it would be created.
        if check and differs:
            return "would change"
        return "not reached" if failed and differs else "ok"
    if result.failed:
        return "failed"
    if result.changed:
        if check:
            return "would change"
        return "undone" if undone else "changed"
    return "ok"


def _error(run: PlaybookRun) -> str:
    """The message of the last failure: the role's rescue repeats the original error there."""
    failures = run.failures()
    if not failures:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"ansible-playbook exited with status {run.returncode}"
    return failures[-1].msg or f"{failures[-1].task} failed"


def _item(result: TaskResult) -> Mapping[str, Any]:
    item = result.data.get("item")
    return item if isinstance(item, Mapping) else {}


def _key(result: TaskResult, *fields: str) -> tuple[Any, ...]:
    item = _item(result)
    return tuple(item.get(f) for f in fields)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None
