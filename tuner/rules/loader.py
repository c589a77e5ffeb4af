"""Load `rules/*.yaml`, `rules/workloads.yaml` and `rules/papers.yaml`, checking every rule
against the contract.

Errors name the file and line ("rules/queues.yaml:42: rule readahead-small: unknown fact 'ra'"),
so a broken rule file stops `advise` with one clear line (exit 2) instead of a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tuner.errors import BadInput
from tuner.facts.catalog import FACTS, fact_names
from tuner.rules.conditions import ConditionError, parse_condition
from tuner.rules.lessons import LESSONS, SEVERITIES
from tuner.rules.model import FixtureRef, Paper, Rule, RuleBase, SettingRec, Source, Workload
from tuner.rules.templates import TemplateError, fields
from tuner.tunables.registry import TUNABLES
from tuner.yaml_text import BoundedLoader, load_yaml, read_text_file

MAX_RULE_FILE_BYTES = 8 << 20
"""One rule file: the whole rule base is about 100 KiB; a file of gigabytes is not rules."""

WORKLOADS_FILE = "workloads.yaml"
PAPERS_FILE = "papers.yaml"
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_RULE_KEYS = {
    "id", "title", "lesson", "severity", "applies_to", "when", "evidence", "recommend",
    "settings", "workloads", "sources", "fixtures",
}  # fmt: skip
_REQUIRED = ("id", "title", "lesson", "severity", "applies_to", "evidence", "recommend", "sources")


class RuleError(ValueError):
    """A rule file that cannot be used; the message starts with file:line."""


class _LineLoader(BoundedLoader):
    """A bounded SafeLoader that remembers the line where each mapping starts (`__line__`)."""


def _mapping_with_line(loader: _LineLoader, node: yaml.MappingNode) -> dict[str, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping  # type: ignore[return-value]


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def _read_yaml(path: Path) -> Any:
    try:
        text = read_text_file(path, MAX_RULE_FILE_BYTES, "rule file")
        # _LineLoader is a bounded SafeLoader: no arbitrary objects, no alias bomb.
        return load_yaml(text, str(path), loader=_LineLoader)
    except BadInput as err:
        raise RuleError(str(err)) from None


def load_rules(directory: Path) -> RuleBase:
    """Every rule and workload under `directory`; raises RuleError naming file and line."""
    if not directory.is_dir():
        raise RuleError(f"{directory}: rule directory not found")
    workloads = _load_workloads(directory / WORKLOADS_FILE)
    papers = _load_papers(directory / PAPERS_FILE)
    names = {w.name for w in workloads}
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        if path.name in (WORKLOADS_FILE, PAPERS_FILE):
            continue
        doc = _read_yaml(path)
        entries = doc.get("rules") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise RuleError(f"{path}:1: expected a mapping with a 'rules' list")
        for entry in entries:
            rule = _rule(path, entry, names, papers)
            if rule.id in seen:
                raise RuleError(
                    f"{path}:{rule.line}: rule id {rule.id!r} already used in {seen[rule.id]}"
                )
            seen[rule.id] = f"{path.name}:{rule.line}"
            rules.append(rule)
    return RuleBase(rules=tuple(rules), workloads=tuple(workloads), papers=tuple(papers.values()))


def _load_workloads(path: Path) -> list[Workload]:
    if not path.is_file():
        raise RuleError(f"{path}: workload profiles not found")
    doc = _read_yaml(path)
    entries = doc.get("workloads") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise RuleError(f"{path}:1: expected a mapping with a 'workloads' list")
    workloads = []
    for entry in entries:
        line = entry.get("__line__", 0) if isinstance(entry, dict) else 0
        if not isinstance(entry, dict) or not {"name", "description"} <= entry.keys():
            raise RuleError(f"{path}:{line}: a workload needs a name and a description")
        fio = {k: v for k, v in (entry.get("fio") or {}).items() if k != "__line__"}
        workloads.append(Workload(str(entry["name"]), str(entry["description"]).strip(), fio))
    return workloads


def _load_papers(path: Path) -> dict[str, Paper]:
    """The paper catalogue by id: every paper with authors, title, year and venue."""
    if not path.is_file():
        raise RuleError(f"{path}: paper catalogue not found")
    doc = _read_yaml(path)
    entries = doc.get("papers") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise RuleError(f"{path}:1: expected a mapping with a 'papers' list")
    papers: dict[str, Paper] = {}
    for entry in entries:
        line = entry.get("__line__", 0) if isinstance(entry, dict) else 0
        where = f"{path}:{line}"
        if not isinstance(entry, dict):
            raise RuleError(f"{where}: a paper must be a mapping")
        missing = [k for k in ("id", "authors", "title", "year", "venue") if not entry.get(k)]
        if missing:
            raise RuleError(f"{where}: paper {entry.get('id', '?')}: missing {', '.join(missing)}")
        authors = entry["authors"]
        if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
            raise RuleError(f"{where}: paper {entry['id']}: authors must be a list of names")
        if not isinstance(entry["year"], int) or isinstance(entry["year"], bool):
            raise RuleError(f"{where}: paper {entry['id']}: year must be a number such as 2005")
        paper_id = str(entry["id"])
        if paper_id in papers:
            raise RuleError(f"{where}: paper {paper_id} listed twice")
        papers[paper_id] = Paper(
            id=paper_id,
            authors=tuple(authors),
            title=str(entry["title"]).strip(),
            year=entry["year"],
            venue=str(entry["venue"]).strip(),
        )
    return papers


def _rule(path: Path, entry: Any, workloads: set[str], papers: dict[str, Paper]) -> Rule:
    line = entry.get("__line__", 0) if isinstance(entry, dict) else 0
    where = f"{path}:{line}"
    if not isinstance(entry, dict):
        raise RuleError(f"{where}: a rule must be a mapping")
    label = f"{where}: rule {entry.get('id', '?')}"
    missing = [key for key in _REQUIRED if key not in entry]
    if missing:
        raise RuleError(f"{label}: missing {', '.join(missing)}")
    unknown = set(entry) - _RULE_KEYS - {"__line__"}
    if unknown:
        raise RuleError(f"{label}: unknown key(s) {', '.join(sorted(unknown))}")
    rule_id = str(entry["id"])
    if not _ID.fullmatch(rule_id):
        raise RuleError(f"{label}: id must be lower-case words joined by dashes")
    if entry["lesson"] not in LESSONS:
        raise RuleError(f"{label}: unknown lesson {entry['lesson']!r}")
    if entry["severity"] not in SEVERITIES:
        raise RuleError(f"{label}: severity must be one of {', '.join(SEVERITIES)}")
    kind = entry["applies_to"]
    if kind not in FACTS:
        raise RuleError(f"{label}: unknown target kind {kind!r} (known: {', '.join(FACTS)})")
    facts = fact_names(kind)
    try:
        when = tuple(parse_condition(str(c), facts) for c in entry.get("when") or ())
    except ConditionError as err:
        raise RuleError(f"{label}: {err}") from None
    for field in ("evidence", "recommend"):
        _check_template(label, field, str(entry[field]), facts)
    rule_workloads = tuple(str(w) for w in entry.get("workloads") or ("all",))
    for name in rule_workloads:
        if name != "all" and name not in workloads:
            raise RuleError(f"{label}: unknown workload {name!r}")
    fixtures = entry.get("fixtures") or {}
    return Rule(
        id=rule_id,
        title=str(entry["title"]),
        lesson=str(entry["lesson"]),
        severity=str(entry["severity"]),
        applies_to=kind,
        when=when,
        evidence=str(entry["evidence"]).strip(),
        recommend=str(entry["recommend"]).strip(),
        settings=tuple(_setting(label, s, facts) for s in entry.get("settings") or ()),
        workloads=rule_workloads,
        sources=_sources(label, entry["sources"], papers),
        fires=_fixture(label, fixtures.get("fires"), workloads),
        quiet=_fixture(label, fixtures.get("quiet"), workloads),
        file=path.name,
        line=line,
    )


def _check_template(label: str, field: str, text: str, facts: frozenset[str]) -> None:
    try:
        names = fields(text)
    except TemplateError as err:
        raise RuleError(f"{label}: {field}: {err}") from None
    unknown = sorted(names - facts)
    if unknown:
        raise RuleError(f"{label}: {field} names unknown fact(s) {', '.join(unknown)}")


def _setting(label: str, raw: Any, facts: frozenset[str]) -> SettingRec:
    if not isinstance(raw, dict) or "key" not in raw:
        raise RuleError(f"{label}: a setting needs a key")
    key = str(raw["key"])
    if key not in TUNABLES:
        raise RuleError(f"{label}: unknown tunable {key!r}")
    given = [name for name in ("value", "at_least", "at_most", "range") if name in raw]
    if len(given) != 1:
        raise RuleError(
            f"{label}: setting {key} needs exactly one of value, at_least, at_most, range"
        )
    for name in given:
        if isinstance(raw[name], str):
            _check_template(label, f"setting {key}", raw[name], facts)
    span = raw.get("range")
    if span is not None and (not isinstance(span, list) or len(span) != 2):
        raise RuleError(f"{label}: setting {key}: range must be [low, high]")
    return SettingRec(
        key=key,
        value=raw.get("value"),
        at_least=raw.get("at_least"),
        at_most=raw.get("at_most"),
        range=None if span is None else (span[0], span[1]),
    )


def _sources(label: str, raw: Any, papers: dict[str, Paper]) -> tuple[Source, ...]:
    if not isinstance(raw, list) or not raw:
        raise RuleError(f"{label}: needs at least one source")
    sources = []
    for item in raw:
        if not isinstance(item, dict) or not {"paper", "where", "quote"} <= item.keys():
            raise RuleError(f"{label}: a source needs paper, where and quote")
        paper = papers.get(str(item["paper"]))
        if paper is None:
            raise RuleError(
                f"{label}: paper {item['paper']!r} is not in {PAPERS_FILE} "
                f"(known: {', '.join(papers)})"
            )
        where, quote = str(item["where"]), str(item["quote"]).strip()
        sources.append(Source(paper.id, where, quote, paper))
    return tuple(sources)


def _fixture(label: str, raw: Any, workloads: set[str]) -> FixtureRef | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return FixtureRef(raw)
    if isinstance(raw, dict) and "scenario" in raw:
        workload = raw.get("workload")
        if workload is not None and workload not in workloads:
            raise RuleError(f"{label}: fixture names unknown workload {workload!r}")
        return FixtureRef(str(raw["scenario"]), None if workload is None else str(workload))
    raise RuleError(f"{label}: a fixture is a scenario name or {{scenario, workload}}")
