"""The shipped rule base: it loads, covers every lesson, and quotes its papers word for word.

The quotes are checked against tests/fixtures/papers/: the passages of each paper the rules quote
(the project does not carry the papers themselves; see the README there).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.resources import rules_dir
from tuner.rules.lessons import LESSONS
from tuner.rules.loader import load_rules

REPO = Path(__file__).resolve().parents[2]
PASSAGES = REPO / "tests" / "fixtures" / "papers"
BASE = load_rules(rules_dir())


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_every_lesson_has_a_rule() -> None:
    assert {r.lesson for r in BASE.rules} == set(LESSONS)


def test_every_workload_is_described_with_fio_parameters() -> None:
    names = {w.name for w in BASE.workloads}
    expected = {"stream-read", "stream-write", "write-once-read-many", "random-read"}
    assert names >= expected | {"disk-to-network", "small-files"}
    assert all(w.fio.get("rw") and w.fio.get("bs") for w in BASE.workloads)


@pytest.mark.parametrize("rule", BASE.rules, ids=lambda r: r.id)
def test_sources_quote_their_paper_verbatim(rule) -> None:  # type: ignore[no-untyped-def]
    for source in rule.sources:
        passages = PASSAGES / source.paper
        assert passages.is_file(), f"{rule.id}: no passages of {source.paper}"
        assert _squash(source.quote) in _squash(passages.read_text()), f"{rule.id}: misquoted"


def test_every_cited_paper_has_authors_title_year_and_venue() -> None:
    cited = {s.paper for r in BASE.rules for s in r.sources}
    catalogue = {p.id: p for p in BASE.papers}
    assert cited <= set(catalogue)
    for paper in catalogue.values():
        assert paper.authors and paper.title and paper.venue and 1990 < paper.year < 2030
    source = BASE.rule("tcp-rmem-below-bdp").sources[0]  # type: ignore[union-attr]
    assert source.citation() == (
        "Hughes-Jones & Dallison, 'Investigation of the interaction between high-performance "
        "networking and disk sub-systems' (2005), Section IV.A"
    )


def test_a_quote_not_in_its_paper_is_caught(tmp_path: Path) -> None:
    # The check above must be able to fail: a word changed in a real quote is not found.
    source = BASE.rule("tcp-rmem-below-bdp").sources[1]  # type: ignore[union-attr]
    text = _squash((PASSAGES / source.paper).read_text())
    assert _squash(source.quote) in text
    assert _squash(source.quote.replace("177 ms", "178 ms")) not in text


def test_docs_rules_md_is_generated_from_the_yaml() -> None:
    generated = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "rules", "list", "--markdown"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert (REPO / "docs" / "rules.md").read_text() == generated, (
        "docs/rules.md is stale: iotuner rules list --markdown > docs/rules.md"
    )
