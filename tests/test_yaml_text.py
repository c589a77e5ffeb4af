"""Reading a YAML file iotuner did not write: bounded in bytes, a FIFO never blocks."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.fuzz.common import refused_well
from tuner.errors import BadInput
from tuner.lab.spec import load_spec
from tuner.plan import read_plan
from tuner.rules.loader import RuleError, load_rules
from tuner.yaml_text import read_text_file


def test_a_file_within_the_bound_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("a: 1\n")
    assert read_text_file(path, 100, "spec") == "a: 1\n"


def test_a_file_over_the_bound_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * 200 + "\n")
    with pytest.raises(BadInput) as err:
        read_text_file(path, 100, "spec")
    assert refused_well(err.value) == f"{path}: larger than 100 bytes: not a spec"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    outcome: list[str] = []

    def read() -> None:
        try:
            read_text_file(fifo, 100, "spec")
        except BadInput as err:
            outcome.append(str(err))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    assert outcome == [f"{fifo}: not a regular file"]


def test_a_lab_spec_larger_than_any_spec_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    spec = tmp_path / "lab.yaml"
    with spec.open("w") as f:  # 3 MiB of comments: nothing a parser would refuse
        f.write("name: huge\n")
        for _ in range(3 * 1024):
            f.write("#" * 1023 + "\n")
    with pytest.raises(BadInput, match="larger than 1 MiB: not a lab spec"):
        load_spec(str(spec))


def test_a_rule_file_larger_than_any_rule_base_is_refused(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "workloads.yaml").write_text("#" * (9 << 20))
    with pytest.raises(RuleError, match="larger than 8 MiB: not a rule file"):
        load_rules(rules)


def test_a_plan_keeps_its_bound(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("#" * ((1 << 20) + 1))
    with pytest.raises(BadInput, match="larger than 1 MiB: not a plan"):
        read_plan(plan)
