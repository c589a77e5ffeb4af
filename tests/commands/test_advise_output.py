"""What an administrator reads from `iotuner advise`: every rule id and every `key=value` whole,
at 80 and 120 columns and in a pipe, and no "No findings" when rules could not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.scenarios import build_scenario

NETWORK = ("--workload", "disk-to-network", "--link-gbps", "10", "--rtt-ms", "100")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("advise-output")
    for name in ("nic-10g-mtu1500-small-buffers", "readahead-128k", "well-configured"):
        build_scenario(name, base / name)
    return base


def advise(root: Path, *args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """`iotuner advise --root ROOT ARGS` with its output piped, as cron or `| less` see it."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", "advise", "--root", str(root), *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("columns", [80, 120, None])
@pytest.mark.parametrize(
    ("scenario", "options"),
    [("nic-10g-mtu1500-small-buffers", NETWORK), ("readahead-128k", ())],
)
def test_every_rule_id_and_setting_prints_whole_on_one_line(
    scenarios: Path, scenario: str, options: tuple[str, ...], columns: int | None
) -> None:
    root = scenarios / scenario
    doc = json.loads(advise(root, *options, "--json").stdout)
    text = advise(root, *options, columns=columns)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "…" not in text.stdout
    wanted = {f["rule"] for f in doc["findings"]}
    assert wanted and all(any(line.startswith(f"{rule} on ") for line in lines) for rule in wanted)
    changes = lines[lines.index(next(line for line in lines if line.startswith("changes ("))) :]
    settings = [s for f in doc["findings"] for s in f["settings"] if s["bound"] != "range"]
    assert settings
    for s in settings:
        if s["value"] == s["current"]:
            continue
        pair = f"{s['key']}={s['value']}"
        # Whole, on a line of its own in the changes block, however wide the value.
        assert any(line.startswith(pair) for line in changes), (pair, changes)


def test_the_changes_block_holds_a_value_with_spaces_whole(scenarios: Path) -> None:
    text = advise(scenarios / "nic-10g-mtu1500-small-buffers", *NETWORK, columns=80).stdout
    assert "\nnet.ipv4.tcp_rmem=4096 131072 125000000\n" in text
    assert "\nnic.mtu=9000 on eth0 (was 1500)\n" in text
    # Citations name authors, title and year, not a file or a number.
    assert "Hughes-Jones & Dallison, 'Investigation of the interaction" in text
    assert "paper 003" not in text and ".txt" not in text


def test_no_findings_is_not_claimed_when_rules_could_not_run(scenarios: Path) -> None:
    root = scenarios / "well-configured"
    result = advise(root, "--workload", "disk-to-network", columns=80)
    assert "nothing the rule base knows" not in result.stdout
    assert "could not be evaluated" in result.stdout
    line = next(line for line in result.stdout.splitlines() if "tcp-rmem-below-bdp" in line)
    assert "tcp-wmem-below-bdp" in line and "give --link-gbps and --rtt-ms" in line
    doc = json.loads(advise(root, "--workload", "disk-to-network", "--json").stdout)
    (group,) = [g for g in doc["unevaluated"] if "tcp-rmem-below-bdp" in g["rules"]]
    assert group["hint"] == "give --link-gbps and --rtt-ms"
    # With the path given, those rules run and nothing is left unevaluated on their account.
    given = json.loads(advise(root, *NETWORK, "--json").stdout)
    assert not [g for g in given["unevaluated"] if "tcp-rmem-below-bdp" in g["rules"]]


def test_explain_prints_conditions_as_written(scenarios: Path) -> None:
    result = advise(scenarios / "readahead-128k", "--explain", columns=80)
    assert "component in [bridge, root_port] and" in result.stdout  # not eaten as markup
    assert "none of 1 targets" not in result.stdout
    assert "rules condition false (" in result.stdout


def test_findings_exit_0_so_plan_out_then_apply_composes(scenarios: Path, tmp_path: Path) -> None:
    # `advise --plan-out p.yaml && iotuner apply p.yaml` must reach apply when there are findings.
    root = scenarios / "readahead-128k"
    plan = tmp_path / "p.yaml"
    ran = advise(root, "--plan-out", str(plan))
    assert ran.returncode == 0, ran.stderr
    assert plan.exists() and "plan written to" in ran.stdout
    assert json.loads(advise(root, "--json").stdout)["findings"], "the scenario has findings"
    # As `git diff --exit-code`: scripts that want findings to fail ask for it.
    strict = advise(root, "--exit-code")
    assert strict.returncode == 1, strict.stderr
    assert advise(root, "--exit-code", "--json").returncode == 1
