"""The shipped rule base: it loads, covers every lesson, and quotes its papers word for word."""

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
SEEDS = REPO.parent / "shared" / "seeds"
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
        paper = SEEDS / source.paper
        assert paper.is_file(), f"{rule.id}: no paper {source.paper}"
        assert _squash(source.quote) in _squash(paper.read_text()), f"{rule.id}: misquoted"


def test_docs_rules_md_is_generated_from_the_yaml() -> None:
    generated = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "rules", "list", "--markdown"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert (REPO / "docs" / "rules.md").read_text() == generated, (
        "docs/rules.md is stale: iotuner rules list --markdown > docs/rules.md"
    )
