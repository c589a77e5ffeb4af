"""The report page: self-contained, every section drawn from its data or saying how to get it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tests.report.conftest import WORKLOAD
from tests.report.samples import bottleneck_doc, sweep_doc, tune_doc
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.report.data import scaling_curves, sweep_grids, tune_run
from tuner.report.page import ReportInputs, render_page
from tuner.rules.engine import evaluate
from tuner.rules.installed import load_rule_base


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


def test_the_page_names_host_kernel_and_cpu_and_the_findings_their_settings(
    host_root: Path, tmp_path: Path
) -> None:
    page = render_page(_inputs(host_root, with_results=True))
    header = page[page.index("<h1>") : page.index("<section")]
    assert "host <strong>nic-hba-one-switch</strong>" in header and "CPUs" in header
    assert "kernel " in header and "CPU " in header
    assert "<th>setting and value</th>" in page
    build_scenario("readahead-128k", tmp_path / "ra")
    topology = probe_host(HostFS(tmp_path / "ra"))
    findings = evaluate(load_rule_base(), collect(topology, FactOptions()), "stream-read").findings
    page = render_page(ReportInputs("ra", "stream-read", topology, findings, (), (), None))
    assert "<code>block.read_ahead_kb=4096 on md0 (was 128)</code>" in page
    # Citations by authors, title and year.
    assert "Hughes-Jones &amp; Dallison, &#x27;Investigation of the interaction" in page


def test_the_tune_caption_and_table_give_the_same_best(host_root: Path) -> None:
    page = render_page(_inputs(host_root, with_results=True))
    caption = re.search(r"<figcaption>(\d+) trials; best ([\d.]+) MB/s as confirmed", page)
    assert caption is not None and caption.group(2) == "96.1"
    assert "<td>96.1 MB/s</td>" in page  # the table's 'after'
    assert "highest single trial 97.0 MB/s" in page


def test_the_convergence_plot_ticks_whole_trials() -> None:
    from tuner.report.figures import convergence_figure

    run = tune_run({**tune_doc(), "trials": tune_doc()["trials"][:3]})
    assert run is not None
    figure = convergence_figure(run)
    ticks = figure.axes[0].get_xticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)


def test_results_follow_the_host_they_were_measured_on() -> None:
    from probes.identity import HostIdentity
    from tuner.report.build import this_hosts

    here = HostIdentity("db1", "1" * 32, "6.12.0")
    mine = {"trials": [], "measured_on": {"hostname": "db1", "machine_id": "1" * 32}}
    renamed = {"trials": [], "measured_on": {"hostname": "db1-old", "machine_id": "1" * 32}}
    other = {"trials": [], "measured_on": {"hostname": "db1", "machine_id": "2" * 32}}
    old = {"trials": []}
    assert this_hosts("tune", mine, here, live=False) == (mine, "The saved result records no date.")
    assert this_hosts("tune", renamed, here, live=False)[0] == renamed  # same machine id
    hidden, note = this_hosts("tune", other, here, live=True)  # same name, another machine
    assert hidden is None and note is not None and "measured on db1" in note
    shown, label = this_hosts("tune", old, here, live=True)
    assert shown == old and label is not None and "records no host" in label
    assert this_hosts("tune", old, here, live=False)[0] is None


def test_no_control_character_reaches_the_page(host_root: Path) -> None:
    # Saved results and notes do not come through the probes' readers: the page's own escaping
    # replaces control characters as well (issue 27).
    inputs = _inputs(host_root, with_results=True)
    hostile = "h\x1b[2J\x1b]0;t\x07\u009b\r\u202ex"
    page = render_page(
        ReportInputs(**{**inputs.__dict__, "host": hostile, "notes": (("tune", hostile),)})
    )
    found = re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", page)
    assert not found, sorted(set(found))
    assert "h\ufffd[2J" in page


def test_lab_results_are_left_out_unless_asked_and_every_result_shown_is_dated() -> None:
    """Issue 30: a tune of the lab's modelled disk was drawn as this host's own figure, with no
    date. Left out (and said) by default; with include_lab, shown and labelled."""
    from probes.identity import HostIdentity
    from tuner.report.build import this_hosts

    here = HostIdentity("db1", "1" * 32, "6.12.0")
    on = {"hostname": "db1", "machine_id": "1" * 32}
    made = {"saved_at": "2026-11-28T09:50:12+00:00", "command": "iotuner tune",
            "devices": ["loop7"], "lab": True}  # fmt: skip
    lab = {"trials": [], "measured_on": on, "origin": made}
    hidden, why = this_hosts("tune", lab, here, live=True)
    assert hidden is None
    assert why == (
        "The saved tune result was measured on the lab (2026-11-28 09:50:12 UTC by "
        "`iotuner tune` on loop7 in the lab), not on this host's own devices: not shown "
        "(`iotuner report --include-lab` shows it)."
    )
    shown, label = this_hosts("tune", lab, here, live=True, include_lab=True)
    assert shown == lab and label is not None and "in the lab" in label
    own = {**lab, "origin": {**made, "command": "iotuner sweep /dev/sdb", "devices": ["sdb"],
                             "lab": False}}  # fmt: skip
    assert this_hosts("sweep", own, here, live=True) == (
        own,
        "Measured 2026-11-28 09:50:12 UTC by `iotuner sweep /dev/sdb` on sdb.",
    )


def test_green_and_up_mean_better_never_only_changed() -> None:
    from tuner.report.page import _before_after, better_or_worse

    run = tune_run(tune_doc())
    assert run is not None
    table = _before_after(run)
    # A changed setting is marked as changed; only the gain says better or worse.
    assert 'class="changed"' in table and 'class="up"' not in table
    assert better_or_worse(1.2, (1.1, 1.3)) == (' class="better"', "\u25b2 better: ")
    assert better_or_worse(0.8, (0.7, 0.9)) == (' class="worse"', "\u25bc worse: ")
    assert better_or_worse(1.05, (0.97, 1.12)) == ("", "")  # within the noise: neither
    assert better_or_worse(None, None) == ("", "")
