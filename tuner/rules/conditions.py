"""Parsing a rule's `when` strings ("read_ahead_kb < 4096") and testing them against facts.

A tiny fixed grammar rather than eval: rules are data that people outside the code edit, and
a condition must be checkable at load time (known fact, known operator) and unable to run code.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from tuner.errors import BadInput
from tuner.rules.model import Condition, FactRef
from tuner.yaml_text import load_yaml

_COMPARISON = re.compile(
    r"^(?P<fact>[a-z_][a-z0-9_]*)\s*(?P<op><=|>=|==|!=|<|>|not in|in|contains)\s+(?P<rhs>.+)$"
)
_ORDER: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_BARE = re.compile(r"^(?P<neg>not\s+)?(?P<fact>[a-z_][a-z0-9_]*)$")


class ConditionError(ValueError):
    """A condition that does not parse or names an unknown fact."""


def parse_condition(text: str, facts: frozenset[str]) -> Condition:
    """Parse one condition for a target kind whose facts are `facts`."""
    text = text.strip()
    bare = _BARE.fullmatch(text)
    if bare:
        fact = bare["fact"]
        _known(fact, facts)
        return Condition(text, fact, "falsy" if bare["neg"] else "truthy")
    match = _COMPARISON.match(text)
    if match is None:
        raise ConditionError(
            f"cannot read condition {text!r} (expected 'fact', 'not fact' or 'fact OP value')"
        )
    fact, op, rhs = match["fact"], match["op"], match["rhs"].strip()
    _known(fact, facts)
    value = _literal(rhs, facts)
    if op in ("in", "not in") and not isinstance(value, list):
        raise ConditionError(f"{text!r}: '{op}' needs a list such as [a, b]")
    return Condition(text, fact, op, value)


def _known(fact: str, facts: frozenset[str]) -> None:
    if fact not in facts:
        raise ConditionError(f"unknown fact {fact!r}")


def _literal(rhs: str, facts: frozenset[str]) -> Any:
    if rhs in facts:
        return FactRef(rhs)
    try:
        value = load_yaml(rhs, "value")  # bounded: a rule file is input too
    except BadInput:
        raise ConditionError(f"cannot read value {rhs[:80]!r}") from None
    if isinstance(value, list):
        return [str(v) if not isinstance(v, (int, float, bool)) else v for v in value]
    return value


def holds(condition: Condition, facts: dict[str, object]) -> bool | None:
    """True or False, or None when a fact it needs is unknown."""
    left = facts.get(condition.fact)
    right = condition.value
    if isinstance(right, FactRef):
        right = facts.get(right.name)
        if right is None:
            return None
    if left is None:
        return None
    op = condition.op
    if op == "truthy":
        return bool(left)
    if op == "falsy":
        return not left
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if op == "contains":
        return str(right) in [item.strip() for item in str(left).split(",")]
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    try:
        return bool(_ORDER[op](left, right))
    except TypeError:  # a number compared with a word: the fact is not what the rule expects
        return None
