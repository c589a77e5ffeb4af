"""Plans in force, and the union a new apply puts on the host (issue 30).

Applies compose: `apply disk.yaml` then `apply net.yaml` holds both, because what is rendered
(files and live values) is the union of the plans in force and the new one, a later entry for
the same key and target winning. `apply --replace` starts again from the new plan alone.

The journal (tuner/apply/changeset.py) keeps, for each change set, the union it applied
(`plan`, which the daemon holds), the plan file it was given (`own_plan`) and the earlier sets
whose plans it still holds (`members`). The plans in force are those of the newest change set
that is applied or unchanged and not rolled back; rollback undoes sets newest first, so after
`rollback --to N` that is N again, and what is in force is exactly what N held.

Read only: the journal is opened read-only, so a check-mode apply and `status` write nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.errors import BadInput
from tuner.state import trusted_database

# A plan is read through every setting's rules (the tunables' registry, most of iotuner's import
# time): imported where a plan is read or rendered, so `status` and `history` on a host with
# nothing applied never load it.
if TYPE_CHECKING:
    from tuner.apply.render import Rendered
    from tuner.plan import Plan, PlanEntry

IN_FORCE = ("applied", "unchanged")
"""Statuses of a change set whose plans hold (unchanged: the host already held them)."""


@dataclass(frozen=True)
class Member:
    """One plan in force: where it came from, and the change set that applied it."""

    apply_id: int | None
    """None: the plan being applied now (its change set has no id yet)."""
    plan_path: str
    plan: Plan

    def describe(self, with_set: bool = True) -> str:
        """One line for `status` (with the change set that applied it) and for a managed
        file's header (without: the same files whichever set wrote them, so `verify` can
        render them again): path and origin."""
        made = f"{self.plan.source} plan of {self.plan.created}"
        if with_set and self.apply_id is not None:
            made += f", apply #{self.apply_id}"
        # ascii(): a path may hold any byte but a `#` comment is one printable ASCII line.
        return f"{ascii(self.plan_path)[1:-1]} ({made})"


@dataclass(frozen=True)
class InForce:
    """What the journal says is in force: the union applied last, and its plans."""

    plan: Plan | None
    members: tuple[Member, ...]


@dataclass(frozen=True)
class Composed:
    """A new apply: the union to render, and the plans it holds (the new one last)."""

    plan: Plan
    members: tuple[Member, ...]

    @property
    def kept(self) -> tuple[int, ...]:
        """The change sets whose plans this apply still holds (the journal's `members`)."""
        return tuple(m.apply_id for m in self.members if m.apply_id is not None)

    def holds(self) -> tuple[str, ...]:
        """One line per plan held, for the managed files' headers."""
        return holds(self.members)


def holds(members: tuple[Member, ...]) -> tuple[str, ...]:
    """The managed files' header lines for these plans; none for one plan, whose own header
    names it (source, host, date, workload) as it always has, so its files stay the same."""
    if len(members) < 2:
        return ()
    return tuple(m.describe(with_set=False) for m in members)


NOTHING = InForce(None, ())


def read_in_force(database: Path) -> InForce:
    """The plans in force according to the state database at `database` (read-only);
    NOTHING when there is none, or no apply was ever journaled in it."""
    try:
        if not database.exists():
            return NOTHING
    except OSError as err:  # a state directory only root may enter, asked by another user
        raise BadInput(f"{database}: cannot read the journal ({err.strerror or err})") from None
    trusted_database(database)
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as err:
        raise BadInput(f"{database}: cannot read the journal ({err})") from None
    try:
        return _read(db, str(database))
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return NOTHING
        raise BadInput(f"{database}: cannot read the journal ({err})") from None
    finally:
        db.close()


def _read(db: sqlite3.Connection, where: str) -> InForce:
    from tuner.plan import DAEMON_SOURCE, parse_plan

    have = {row[1] for row in db.execute("PRAGMA table_info(applies)")}
    # A journal an older iotuner wrote has neither column: each set held its own plan only.
    own = "own_plan" if "own_plan" in have else "NULL"
    members = "members" if "members" in have else "NULL"
    row = db.execute(
        f"SELECT id, plan, {members} FROM applies WHERE status IN (?, ?)"
        " AND rolled_back_at IS NULL AND (source IS NULL OR source != ?) ORDER BY id DESC",
        (*IN_FORCE, DAEMON_SOURCE),
    ).fetchone()
    if row is None:
        return NOTHING
    latest, union_text, kept = int(row[0]), str(row[1]), row[2]
    ids = [*_ids(kept), latest]
    found = []
    for apply_id in ids:
        member = db.execute(
            f"SELECT plan_path, COALESCE({own}, plan) FROM applies WHERE id = ?", (apply_id,)
        ).fetchone()
        if member is not None:
            plan = parse_plan(str(member[1]), f"{where}: apply #{apply_id}")
            found.append(Member(apply_id, str(member[0]), plan))
    return InForce(parse_plan(union_text, f"{where}: apply #{latest}"), tuple(found))


def _ids(text: object) -> list[int]:
    try:
        found = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return []
    return [i for i in found if type(i) is int] if isinstance(found, list) else []


def compose(
    new: Plan,
    plan_path: str,
    in_force: InForce,
    *,
    replace_all: bool = False,
    target_of: Callable[[str, str], str] = lambda key, target: target,
) -> Composed:
    """The union of what is in force and `new`: the earlier entries the new plan does not set
    again (same key, same target after `target_of` resolves it), then the new plan's. A plan
    in force all of whose entries later plans set again no longer counts as held."""
    mine = Member(None, plan_path, new)
    if replace_all or in_force.plan is None:
        return Composed(new, (mine,))

    def slot(entry: PlanEntry) -> tuple[str, str]:
        return entry.key, target_of(entry.key, entry.target)

    taken = {slot(e) for e in new.entries}
    earlier = tuple(e for e in in_force.plan.entries if slot(e) not in taken)
    # Each slot belongs to the last plan that set it; a plan that owns none no longer counts.
    owner: dict[tuple[str, str], int] = {}
    for index, member in enumerate((*in_force.members, mine)):
        owner.update((slot(e), index) for e in member.plan.entries)
    owners = set(owner.values())
    members = tuple(m for i, m in enumerate((*in_force.members, mine)) if i in owners or m is mine)
    workloads = {m.plan.workload for m in members}
    union = replace(
        new,
        entries=earlier + new.entries,
        # One workload when every plan held was made for it; otherwise the union has none.
        workload=new.workload if len(workloads) == 1 else None,
    )
    return Composed(union, members)


def union_text(composed: Composed) -> str:
    """The union as plan YAML, as the journal keeps it (and the daemon holds it)."""
    from tuner.plan import plan_text

    return plan_text(composed.plan)


def render_composed(
    plan_path: Path,
    *,
    database: Path,
    root: Path = Path("/"),
    conf_root: Path = Path("/"),
    replace_all: bool = False,
) -> tuple[Composed, Rendered, str]:
    """Read the plan at `plan_path`, add it to the plans in force (from the state database
    `database`) and render the union; returns it, its rendering and the plan file's text.
    BadInput names the plan entry at fault, or says that the plans in force no longer fit
    this host (a disk gone) and that `--replace` applies the new plan alone."""
    from tuner.apply.render import render, resolved_target
    from tuner.plan import parse_plan, read_plan_text
    from tuner.tunables.access import Tunables

    text = read_plan_text(plan_path)
    new = parse_plan(text, str(plan_path))
    where = str(plan_path)
    tunables = Tunables(root)
    composed = compose(
        new,
        where,
        NOTHING if replace_all else read_in_force(database),
        replace_all=replace_all,
        target_of=lambda key, target: resolved_target(tunables, key, target),
    )
    if composed.plan is new:
        held = render(new, plan_path=where, root=root, conf_root=conf_root, holds=composed.holds())
        return composed, held, text
    # The new plan on its own first: a bad entry of it is named as the entry of its file.
    render(new, plan_path=where, root=root, conf_root=conf_root)
    try:
        held = render(composed.plan, plan_path="the plans in force", root=root,
                      conf_root=conf_root, holds=composed.holds())  # fmt: skip
    except BadInput as err:
        raise BadInput(
            f"{where}: cannot add it to the plans in force ({err}); "
            "`iotuner apply --replace` applies it alone"
        ) from None
    return composed, held, text


def render_for_verify(plan: Plan, plan_path: str, *, database: Path, root: Path,
                      conf_root: Path) -> Rendered:  # fmt: skip
    """What `verify PLAN` checks: when PLAN is one of the plans in force, the files as the
    union in force renders them (they hold the other plans too) with the union's values;
    otherwise PLAN alone, as apply --replace would write it."""
    from tuner.apply.render import render

    found = read_in_force(database)
    if found.plan is not None and any(m.plan == plan for m in found.members):
        return render(found.plan, plan_path="the plans in force", root=root,
                      conf_root=conf_root, holds=holds(found.members))  # fmt: skip
    return render(plan, plan_path=plan_path, root=root, conf_root=conf_root,
                  holds=holds((Member(None, plan_path, plan),)))  # fmt: skip


def in_force_document(in_force: InForce) -> list[dict[str, object]]:
    """The plans in force as JSON-able rows (`status --json`, `history --json`), oldest first."""
    return [
        {
            "apply_id": m.apply_id,
            "plan": m.plan_path,
            "source": m.plan.source,
            "created": m.plan.created,
            "workload": m.plan.workload,
            "entries": len(m.plan.entries),
        }
        for m in in_force.members
    ]


def in_force_lines(in_force: InForce) -> list[str]:
    """The plans in force as `status` and `history` print them: a heading and one per plan."""
    if not in_force.members:
        return ["plans in force: none (nothing applied, or every apply rolled back)"]
    lines = [f"plans in force ({len(in_force.members)}, oldest first; a later entry wins):"]
    lines += [f"  {m.describe()}" for m in in_force.members]
    return lines
