"""Reading YAML iotuner did not write: a bounded loader, and one line when a file is refused.

Every YAML reader goes through `BoundedLoader` (a SafeLoader). PyYAML shares an aliased node
rather than copying it, so a few hundred bytes of aliases ("billion laughs") load at once and
expand to billions of nodes for whatever walks the result; deep nesting recurses in the
composer until RecursionError. The loader counts every node as it is composed, an alias
counting the whole size of the node it names, and refuses a document over MAX_NODES nodes or
MAX_DEPTH levels before it recurses further or anything walks it.

PyYAML's own message names '<unicode string>' and spans several lines with a caret drawing;
people need "plan.yaml:5: not valid YAML (expected ',' or ']', but got ':')".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent, Event
from yaml.nodes import Node

from tuner.errors import BadInput

MAX_NODES = 200_000
"""Nodes in one document, aliases expanded: a plan of every tunable on a thousand disks, or the
whole rule base, is well below this; walking this many takes well under a second."""
MAX_DEPTH = 64
"""Levels of nesting: iotuner's files use fewer than ten."""


def _size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and limit % (1 << 20) == 0 else f"{limit} bytes"


def read_text_file(path: Path, max_bytes: int, what: str) -> str:
    """The UTF-8 text of `path`, a regular file of at most `max_bytes`; BadInput otherwise.

    Opened non-blocking and checked after opening: a FIFO or a device named as a plan, spec or
    rule file would block or never end, and a file of gigabytes would be read whole before any
    parser could refuse it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise BadInput(f"{path}: cannot read {what} ({err.strerror or err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: not a regular file")
        data = os.read(fd, max_bytes + 1) if info.st_size <= max_bytes else b""
    finally:
        os.close(fd)
    if info.st_size > max_bytes or len(data) > max_bytes:
        raise BadInput(f"{path}: larger than {_size_text(max_bytes)}: not a {what}")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None


class YamlBudgetError(ComposerError):
    """A document over the node or depth budget: refused, not malformed."""


def _refused(why: str, event: Any) -> YamlBudgetError:
    """The refusal, marked at the event where the budget ran out."""
    return YamlBudgetError(None, None, why, event.start_mark)


class BoundedLoader(yaml.SafeLoader):
    """A SafeLoader with a node budget (aliases expanded count) and a depth budget."""

    max_nodes = MAX_NODES
    max_depth = MAX_DEPTH

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(anchored node) -> its size, aliases expanded

    def _spend(self, count: int, event: Any) -> None:
        self._nodes += count
        if self._nodes > self.max_nodes:
            raise _refused(
                f"more than {self.max_nodes} YAML nodes once aliases are expanded", event
            )

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        """The next node, counted against the budgets before it is composed."""
        self.check_event(Event)  # the next event, parsed and held as current_event
        event = self.current_event
        if isinstance(event, AliasEvent):
            named = self.anchors.get(event.anchor or "")
            if named is not None:
                size = self._sizes.get(id(named))
                if size is None:  # still being composed: the alias would make a cycle
                    raise _refused(f"alias *{event.anchor} inside its own anchor", event)
                self._spend(size, event)
            return super().compose_node(parent, index)
        if self._depth >= self.max_depth:
            raise _refused(f"YAML nested deeper than {self.max_depth} levels", event)
        self._spend(1, event)
        before = self._nodes
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if getattr(event, "anchor", None) is not None:
            self._sizes[id(node)] = self._nodes - before + 1
        return node


def load_yaml(text: str, where: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The one document in `text`, within the budgets; BadInput in one line naming `where`."""
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as err:
        raise BadInput(yaml_error(where, err)) from None
    except (RecursionError, ValueError, OverflowError, TypeError) as err:
        # ValueError: a 5000-digit int, a 31st of February; the rest from what PyYAML builds.
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise BadInput(f"{where}: cannot read YAML ({why[:200]})") from None


def yaml_error(where: str, err: yaml.YAMLError) -> str:
    """'WHERE:LINE: not valid YAML (problem)', the line counted from 1 as editors do."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or "cannot be parsed"
    context = getattr(err, "context", None)
    detail = f"{problem}, {context}" if context else problem
    verdict = "refused" if isinstance(err, YamlBudgetError) else "not valid YAML"
    return f"{where}{line}: {verdict} ({detail})"
