"""Write small rule directories for loader and engine tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

WORKLOADS = """\
workloads:
  - name: stream-read
    description: Large sequential reads.
    fio: {rw: read, bs: 1M}
  - name: random-read
    description: Small random reads.
    fio: {rw: randread, bs: 4k}
"""

PAPERS = """\
papers:
  - id: 003_7920ff5510b23a75.txt
    authors: ["Hughes-Jones, Richard", "Dallison, Stephen"]
    title: Investigation of the interaction between high-performance networking and disk sub-systems
    year: 2005
    venue: The University of Manchester
"""

READAHEAD = """\
rules:
  - id: readahead-small
    title: Readahead too small for streaming
    lesson: readahead
    severity: warning
    applies_to: disk
    when:
      - is_physical
      - read_ahead_kb < 4096
    evidence: "{name} reads ahead {read_ahead_kb} KB"
    recommend: "Raise readahead on {name} to at least 4096 KB."
    settings:
      - key: block.read_ahead_kb
        at_least: 4096
    workloads: [stream-read]
    sources:
      - paper: 003_7920ff5510b23a75.txt
        where: "Section 4"
        quote: "blockdev --setra 16384"
"""


def rule_dir(
    root: Path, rules: str = READAHEAD, workloads: str = WORKLOADS, papers: str = PAPERS
) -> Path:
    """A rule directory holding workloads.yaml, papers.yaml and one theme file with `rules`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "workloads.yaml").write_text(workloads)
    (root / "papers.yaml").write_text(papers)
    (root / "queues.yaml").write_text(textwrap.dedent(rules))
    return root
