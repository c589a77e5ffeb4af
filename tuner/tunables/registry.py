"""The keys of every tunable, with the scope a value applies to and how it is persisted.

Rules may only recommend keys listed here (the rule loader checks). Each spec is read from the
tunable's own module (its class says scope, value kind, persistence and documentation), so a
new setting is one module listed in tuner/tunables/table.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.tunables.table import IMPLEMENTATIONS


@dataclass(frozen=True)
class TunableSpec:
    """What a key means: scope is device, host, irq or nic; persist names the mechanism;
    netns says a host key may also target one network namespace (`netns:NAME`)."""

    key: str
    scope: str
    kind: str  # int, choice, triple (three ints), cpus
    persist: str
    doc: str
    netns: bool = False


TUNABLES: dict[str, TunableSpec] = {
    key: TunableSpec(key, t.scope, t.value_kind, t.persist, t.doc, t.netns)
    for key, t in IMPLEMENTATIONS.items()
}
