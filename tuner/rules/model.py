"""Rules, their conditions and recommendations, and the findings they produce."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FactRef:
    """The right-hand side of a condition that names another fact of the same target."""

    name: str


@dataclass(frozen=True)
class Condition:
    """`fact op value`; op is truthy, falsy, <, <=, >, >=, ==, !=, in, not in, contains."""

    text: str
    fact: str
    op: str
    value: Any = None


@dataclass(frozen=True)
class Paper:
    """One entry of the paper catalogue (rules/papers.yaml)."""

    id: str  # what rules write under `paper:` (the file name of the text they were written from)
    authors: tuple[str, ...]  # "Surname, Given names"
    title: str
    year: int
    venue: str

    def short_authors(self) -> str:
        """'Hughes-Jones & Dallison', 'Riedel, van Ingen & Gray': surnames, as people cite."""
        surnames = [author.split(",")[0].strip() for author in self.authors]
        if len(surnames) <= 1:
            return "".join(surnames)
        return f"{', '.join(surnames[:-1])} & {surnames[-1]}"

    def full_authors(self) -> str:
        """'Richard Hughes-Jones and Stephen Dallison': given names first, as a reference list."""
        names = [
            " ".join(reversed([part.strip() for part in a.split(",", 1)])) for a in self.authors
        ]
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    def citation(self) -> str:
        """Surnames, title and year: Hughes-Jones & Dallison, 'Investigation of ...' (2005)."""
        return f"{self.short_authors()}, '{self.title}' ({self.year})"


@dataclass(frozen=True)
class Source:
    """Where a rule's lesson comes from: the paper, section/table/slide, the quoted figure."""

    paper: str  # a Paper id
    where: str
    quote: str
    reference: Paper | None = None  # the catalogue's entry, filled in by the loader

    def citation(self) -> str:
        """Authors, title, year and the place in the paper, for people to look it up."""
        work = self.reference.citation() if self.reference else self.paper
        return f"{work}, {self.where}" if self.where else work


@dataclass(frozen=True)
class SettingRec:
    """A recommended setting: exactly one of value, at_least, at_most, or a search range."""

    key: str
    value: Any = None
    at_least: Any = None
    at_most: Any = None
    range: tuple[Any, Any] | None = None


@dataclass(frozen=True)
class FixtureRef:
    """A test scenario (tests/fixtures/scenarios.py), optionally under another workload."""

    scenario: str
    workload: str | None = None


@dataclass(frozen=True)
class Rule:
    """One lesson applied to one kind of target; see docs/rules-format.md."""

    id: str
    title: str
    lesson: str
    severity: str
    applies_to: str
    when: tuple[Condition, ...]
    evidence: str
    recommend: str
    settings: tuple[SettingRec, ...]
    workloads: tuple[str, ...]
    sources: tuple[Source, ...]
    fires: FixtureRef | None
    quiet: FixtureRef | None
    file: str
    line: int

    def concerns(self, workload: str | None) -> bool:
        """True when the rule matters for `workload` (None: any workload)."""
        return workload is None or "all" in self.workloads or workload in self.workloads


@dataclass(frozen=True)
class Workload:
    """A named workload profile and the fio parameters its trials use.

    `region`: a user's `--fio-job` placement options (size, offset, offset_increment) and
    `files`: the existing files it names; a read-only job's trials read those files with that
    placement, as the job does (profiles have neither). `resembles`: the built-in profiles a
    user's job was judged to resemble (tuner/trials/jobkind.py), whose rules concern it too;
    `judged`: that judgement in words, for the result.
    """

    name: str
    description: str
    fio: dict[str, Any]
    region: dict[str, Any] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    resembles: tuple[str, ...] = ()
    judged: str | None = None


@dataclass(frozen=True)
class RuleBase:
    """Every rule and workload, loaded and checked."""

    rules: tuple[Rule, ...]
    workloads: tuple[Workload, ...]
    papers: tuple[Paper, ...] = ()

    def rule(self, rule_id: str) -> Rule | None:
        """The rule with this id, or None."""
        return next((r for r in self.rules if r.id == rule_id), None)

    def workload(self, name: str) -> Workload | None:
        """The workload with this name, or None."""
        return next((w for w in self.workloads if w.name == name), None)


@dataclass(frozen=True)
class Setting:
    """A concrete recommendation for one target; `value` None means a range for the search."""

    key: str
    target: str
    value: Any
    bound: str  # value, at_least, at_most or range
    current: Any = None
    range: tuple[Any, Any] | None = None


@dataclass(frozen=True)
class Finding:
    """A rule that fired for one target, with the evidence filled in."""

    rule: str
    title: str
    lesson: str
    severity: str
    target: str
    evidence: str
    recommendation: str
    settings: tuple[Setting, ...]
    sources: tuple[Source, ...]
    workloads: tuple[str, ...]


@dataclass(frozen=True)
class Explanation:
    """Why a rule did or did not fire: fired, condition false, facts unknown, no targets..."""

    rule: str
    status: str
    detail: str
    unknown: tuple[str, ...] = ()  # with status "facts unknown": the facts no target knew
