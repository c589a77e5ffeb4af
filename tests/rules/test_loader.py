"""The rule loader: good files load, and every kind of broken file names file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.common import within
from tests.rules.rule_files import PAPERS, READAHEAD, rule_dir
from tests.yaml_bombs import sized_bomb
from tuner.rules.loader import RuleError, load_rules


def test_a_valid_rule_loads_with_its_line(tmp_path: Path) -> None:
    base = load_rules(rule_dir(tmp_path))
    (rule,) = base.rules
    assert (rule.id, rule.lesson, rule.applies_to, rule.line, rule.file) == (
        "readahead-small", "readahead", "disk", 2, "queues.yaml",
    )  # fmt: skip
    assert [c.text for c in rule.when] == ["is_physical", "read_ahead_kb < 4096"]
    assert rule.settings[0].at_least == 4096
    assert base.workload("stream-read") is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("lesson: readahead", "lesson: speed"), "unknown lesson 'speed'"),
        (("read_ahead_kb < 4096", "readahead < 4096"), "unknown fact 'readahead'"),
        (("block.read_ahead_kb", "block.readahead"), "unknown tunable 'block.readahead'"),
        (("[stream-read]", "[streaming]"), "unknown workload 'streaming'"),
        (("severity: warning", "severity: bad"), "severity must be one of"),
        (("applies_to: disk", "applies_to: toaster"), "unknown target kind 'toaster'"),
        (("{read_ahead_kb} KB", "{ra} KB"), "evidence names unknown fact(s) ra"),
        (("read_ahead_kb < 4096", "read_ahead_kb <<< 4096"), "cannot read condition"),
        (("at_least: 4096", "at_least: 4096\n        value: 1"), "exactly one of"),
        (("    sources:", "    sauces:"), "missing sources"),
        (("003_7920ff5510b23a75.txt", "003_unknown.txt"), "paper '003_unknown.txt' is not in"),
    ],
)
def test_broken_rule_names_file_line_and_problem(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    rules = READAHEAD.replace(*change)
    with pytest.raises(RuleError) as err:
        load_rules(rule_dir(tmp_path, rules))
    text = str(err.value)
    assert (
        text.startswith(f"{tmp_path}/queues.yaml:2: rule readahead-small: ")
        or "sauces" in change[1]
    )
    assert message in text


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    broken = READAHEAD.replace("    when:", "    when: [unclosed")
    with pytest.raises(RuleError, match=r"queues.yaml:\d+: not valid YAML"):
        load_rules(rule_dir(tmp_path, broken))


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    twice = READAHEAD + READAHEAD.removeprefix("rules:\n")
    with pytest.raises(RuleError, match=r"already used in queues\.yaml:2"):
        load_rules(rule_dir(tmp_path, twice))


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="rule directory not found"):
        load_rules(tmp_path / "nope")


def test_sources_carry_the_catalogue_entry_of_their_paper(tmp_path: Path) -> None:
    (rule,) = load_rules(rule_dir(tmp_path)).rules
    (source,) = rule.sources
    assert source.reference is not None and source.reference.year == 2005
    assert source.citation() == (
        "Hughes-Jones & Dallison, 'Investigation of the interaction between high-performance "
        "networking and disk sub-systems' (2005), Section 4"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("    year: 2005\n", ""), "missing year"),
        (("year: 2005", "year: recent"), "year must be a number"),
        (('["Hughes-Jones, Richard", "Dallison, Stephen"]', "Hughes-Jones"), "list of names"),
    ],
)
def test_a_broken_paper_catalogue_names_file_and_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    directory = rule_dir(tmp_path, papers=PAPERS.replace(*change))
    with pytest.raises(RuleError, match=rf"papers\.yaml:2: paper .*{message}"):
        load_rules(directory)


def test_deep_nesting_in_a_rule_file_is_one_line(tmp_path: Path) -> None:
    # 10,000 levels were a RecursionError out of the loader (issue 27).
    deep = "rules: " + "[" * 10_000 + "]" * 10_000 + "\n"
    with within(2.0), pytest.raises(RuleError) as err:
        load_rules(rule_dir(tmp_path, deep))
    text = str(err.value)
    assert text.startswith(f"{tmp_path}/queues.yaml:1: ") and "nested deeper than" in text
    assert "\n" not in text


def test_a_rule_file_of_yaml_aliases_is_one_line(tmp_path: Path) -> None:
    bomb = "rules:\n  - id: x\n    title: x\n    notes:\n" + sized_bomb(38_000, indent="      ")
    with within(2.0), pytest.raises(RuleError) as err:
        load_rules(rule_dir(tmp_path, bomb))
    assert "refused (more than" in str(err.value) and "\n" not in str(err.value)
