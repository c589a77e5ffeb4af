"""Finding the words (issue 30 point 8): the workloads listed one line each, shell completion
of workloads, rule ids, lab specs and devices, and options the chosen workload does not use
refused instead of ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import iotuner
from tuner.rules.installed import load_rule_base

WORKLOADS = [w.name for w in load_rule_base().workloads]


def complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (click's protocol)."""
    env = {**os.environ, "_IOTUNER_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", "from tuner.cli import app; app(prog_name='iotuner')"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    return done.stdout.split()


def test_workloads_lists_every_workload_one_line_each() -> None:
    listed = iotuner("workloads")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == WORKLOADS
    assert "random-write" in WORKLOADS
    # One line each, a sentence long: what the workload stands for.
    for line in lines:
        assert line.endswith("."), line
    doc = json.loads(iotuner("workloads", "--json").stdout)
    assert [w["name"] for w in doc["workloads"]] == WORKLOADS


def test_tune_workload_list_prints_the_same_and_tunes_nothing(state: Path) -> None:
    listed = iotuner("tune", "--workload", "list", state=state)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == iotuner("workloads").stdout
    assert not state.exists(), "listing made no state directory, no lab, no journal"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("iotuner advise --workload stream-", ["stream-read", "stream-write"]),
        ("iotuner tune --workload ", [*WORKLOADS, "list"]),
        ("iotuner rules show tcp-rmem", ["tcp-rmem-below-bdp"]),
        ("iotuner lab up hd", ["hdd", "hdd-5400"]),
    ],
)
def test_completion_offers_the_words(words: str, expected: list[str]) -> None:
    assert complete(words) == expected


def test_completion_offers_block_devices() -> None:
    names = sorted(os.listdir("/sys/block"))
    assert complete("iotuner tune --destroy-data /dev/") == [f"/dev/{n}" for n in names]


@pytest.mark.parametrize("flags", [["--link-gbps", "10"], ["--rtt-ms", "20"],
                                   ["--peer", "192.0.2.1"]])  # fmt: skip
def test_path_options_for_a_workload_without_a_network_are_refused(flags: list[str]) -> None:
    done = iotuner("advise", "--workload", "stream-read", *flags)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"iotuner: {flags[0]}: no rule for workload stream-read uses the network path; it "
        "matters for --workload disk-to-network: drop it or name that workload"
    )


def test_path_options_with_the_network_workload_are_taken(hwloc_root) -> None:  # type: ignore[no-untyped-def]
    root = hwloc_root("32em64t-2n8c+dax+nvme+mic+dimms")
    done = iotuner("advise", "--root", str(root), "--workload", "disk-to-network",
                   "--link-gbps", "10", "--rtt-ms", "100", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "bdp" in done.stdout
