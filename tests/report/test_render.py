"""`iotuner report` end to end, drawn by headless Chromium: not blank, no console errors.

CI installs Debian's chromium (scripts/setup --dev); where it is missing locally these tests skip.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.report.browser import CHROMIUM, pixel_spread, render
from tests.report.conftest import SCENARIO, WORKLOAD
from tests.report.samples import bottleneck_doc, sweep_doc, tune_doc

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium (scripts/setup --dev installs Debian's chromium)"
)


def test_report_command_writes_the_page(host_root: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    out = tmp_path / "empty.html"
    proc = iotuner("report", "--root", str(host_root), "--workload", WORKLOAD,
                   "--out", str(out), "--json", state=state, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["findings"] >= 1 and summary["tune_trials"] == 0
    assert "iotuner bottleneck" in out.read_text()
    bad = iotuner("report", "--out", str(tmp_path / "no" / "such.html"), state=state)
    assert bad.returncode == 2 and "does not exist" in bad.stderr


@needs_chromium
def test_the_checks_catch_a_script_error_and_a_blank_page(tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><h1>report</h1><script>drawPlots();</script></body></html>")
    rendered = render(broken, tmp_path, width=400, height=300)
    assert any("Uncaught ReferenceError" in line for line in rendered.console), rendered.stderr
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body></body></html>")
    rendered = render(blank, tmp_path, width=400, height=300)
    assert rendered.console == ()
    assert pixel_spread(rendered.screenshot) < 0.01


@needs_chromium
def test_report_renders_in_chromium(host_root: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    results = state / "results"
    results.mkdir(parents=True)
    here = {"measured_on": {"hostname": SCENARIO}}  # measured on the host the report is about
    for name, doc in (("bottleneck", bottleneck_doc()), ("sweep", sweep_doc()),
                      ("tune", tune_doc())):  # fmt: skip
        (results / f"{name}.json").write_text(json.dumps({**doc, **here}))
    out = tmp_path / "report.html"
    proc = iotuner("report", "--root", str(host_root), "--workload", WORKLOAD,
                   "--out", str(out), state=state, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().count("<img") == 3
    rendered = render(out, tmp_path)
    assert rendered.console == (), f"console messages: {rendered.console}"
    assert pixel_spread(rendered.screenshot) > 0.05, "the screenshot is blank"


def test_a_report_of_another_host_shows_none_of_this_hosts_results(
    host_root: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    results = state / "results"
    results.mkdir(parents=True)
    elsewhere = {"measured_on": {"hostname": "lab-vm", "machine_id": "ab" * 16, "kernel": "6.1"}}
    (results / "tune.json").write_text(json.dumps({**tune_doc(), **elsewhere}))
    (results / "sweep.json").write_text(json.dumps(sweep_doc()))  # an older iotuner's: no host
    out = tmp_path / "report.html"
    proc = iotuner("report", "--root", str(host_root), "--workload", WORKLOAD,
                   "--out", str(out), "--json", state=state, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tune_trials"] == 0
    page = out.read_text()
    assert "<img" not in page
    assert "The saved tune result was measured on lab-vm, kernel 6.1, not on " in page
    assert "The saved sweep result records no host" in page and "not shown for a capture" in page
