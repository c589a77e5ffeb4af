"""A capture whose strings hold control characters and markup: what probe, advise and report
print or write holds neither raw (issue 27: escape sequences in a captured host name or model
string reached the terminal as they were, and a host name's newline forged a line of its own).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from tests.cli import iotuner

HOSTILE = "X[/]Y[red]Z[/red]\x1b[31mESC\x1b]0;title\x07\u009bC1\u202eBIDI\rCR\x08BS"
HOST = "evil\x1b[2Jhost\nforged[/]line"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build(tmp_path_factory.mktemp("captured") / "host", Shape(disks=2, controllers=1,
                                                                      pci_functions=4))  # fmt: skip
    models = sorted(root.glob("sys/devices/**/model"))
    assert models, "the synthetic host has SCSI disks with a model file"
    for model in models:
        model.write_text(HOSTILE + "\n")
    for rel in ("proc/sys/kernel/hostname", "etc/hostname"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(HOST + "\n")
    return root


def _clean(text: str) -> None:
    found = _CONTROL.findall(text)
    assert not found, sorted(set(found))


def test_probe_shows_captured_strings_without_control_characters(capture: Path) -> None:
    result = iotuner("probe", "--root", str(capture), timeout=120)
    assert result.returncode == 0, result.stderr
    _clean(result.stdout.replace("\n", "").replace("\t", ""))
    _clean(result.stderr.replace("\n", ""))
    assert "X[/]Y[red]Z[/red]" in result.stdout  # markup in a model string is shown as is
    assert "forged[/]line" in result.stdout
    assert not any(line.startswith("forged") for line in result.stdout.splitlines())


def test_probe_json_carries_the_replaced_strings(capture: Path) -> None:
    result = iotuner("probe", "--root", str(capture), "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    doc = result.stdout
    assert "\\u001b" not in doc and "\\u009b" not in doc and "\\r" not in doc, doc[:300]
    machine = json.loads(doc)["nodes"][0]
    assert "\n" not in machine["hostname"] and "\ufffd" in machine["hostname"]


def test_advise_and_its_plan_hold_no_control_characters(capture: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    result = iotuner("advise", "--root", str(capture), "--plan-out", str(plan), timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    _clean(result.stdout.replace("\n", ""))
    if plan.exists():
        _clean(plan.read_text().replace("\n", ""))


def test_report_holds_no_control_characters(capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = iotuner("report", "--root", str(capture), "--out", str(out), timeout=120)
    assert result.returncode == 0, result.stderr
    _clean(out.read_text().replace("\n", "").replace("\t", ""))
    assert "\x1b" not in result.stdout
