"""The report page: self-contained, every section drawn from its data or saying how to get it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.report.conftest import WORKLOAD
from tests.report.samples import bottleneck_doc, sweep_doc, tune_doc
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.report.data import scaling_curves, sweep_grids, tune_run
from tuner.report.page import ReportInputs, render_page
from tuner.rulebase import load_rule_base
from tuner.rules.engine import evaluate


def _inputs(host_root: Path, with_results: bool) -> ReportInputs:
    topology = probe_host(HostFS(host_root))
    findings = evaluate(load_rule_base(), collect(topology, FactOptions()), WORKLOAD).findings
    return ReportInputs(
        host="fixture",
        workload=WORKLOAD,
        topology=topology,
        findings=findings,
        scaling=tuple(scaling_curves(bottleneck_doc() if with_results else None)),
        sweeps=tuple(sweep_grids(sweep_doc() if with_results else None)),
        tune=tune_run(tune_doc()) if with_results else None,
    )


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_page_with_results_inlines_every_plot(host_root: Path) -> None:
    page = render_page(_inputs(host_root, with_results=True))
    parser = _Tags()
    parser.feed(page)
    tags = [tag for tag, _ in parser.tags]
    images = [attrs.get("src") or "" for tag, attrs in parser.tags if tag == "img"]
    assert len(images) == 3  # one scaling curve, one heatmap, one convergence plot
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert "svg" in tags  # the topology diagram, inline
    # Self-contained: nothing fetched from anywhere, and no script to go wrong.
    assert "script" not in tags and "link" not in tags
    assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", page)
    assert "share bus loop3: plateau 251 MB/s" in page
    assert "half power from 256K" in page
    assert "nic-storage-shared-bridge" in page  # the findings table
    assert "61.0 MB/s" in page and "96.1 MB/s" in page and "x1.575 (+57.5%)" in page  # before/after
    assert "left out, no measurable gain: block.scheduler (loop4) kyber" in page
    assert "No scaling results" not in page


def test_sections_without_data_say_how_to_produce_it(host_root: Path) -> None:
    page = render_page(_inputs(host_root, with_results=False))
    assert "<img" not in page
    for command in ("iotuner bottleneck", "iotuner sweep DEVICE", "iotuner tune"):
        assert f"<code>{command}</code>" in page
