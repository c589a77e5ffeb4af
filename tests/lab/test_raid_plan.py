"""raid.c's request planning (compiled with gcc, without nbdkit, by tests/lab/c/raid_plan.c)
against raid.py's `member_commands`, which the lab tests hold the served set's counts to: the
two agree on every request, aligned or not."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tuner.lab.raid import RaidModel, member_commands

HERE = Path(__file__).parent
LAB = HERE.parent.parent / "tuner" / "lab"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (scripts/setup installs it)")
def test_raid_c_plans_what_raid_py_counts(tmp_path: Path) -> None:
    harness = tmp_path / "raid_plan"
    subprocess.run(
        ["gcc", "-O1", "-fno-math-errno", "-w", "-I", str(LAB), str(HERE / "c" / "raid_plan.c"),
         "-o", str(harness)],
        check=True, timeout=120,
    )  # fmt: skip
    draw = random.Random(18)
    cases = []
    for _ in range(2000):
        kind = draw.choice(["raid0", "raid5"])
        model = RaidModel(kind, draw.randint(3, 8), draw.choice([4, 16, 64, 256]))
        unit = model.stripe_kib * 1024
        offset = draw.choice([0, unit, 4096]) * draw.randint(0, 40) + draw.choice([0, 512])
        length = draw.choice([512, 4096, unit, model.full_stripe_bytes, 1 << 20]) * draw.randint(
            1, 3
        )
        cases.append((model, offset, length, draw.random() < 0.6))
    lines = "".join(
        f"{m.level} {m.members} {m.stripe_kib} {o} {n} {int(w)}\n" for m, o, n, w in cases
    )
    done = subprocess.run(
        [str(harness)], input=lines, capture_output=True, text=True, check=True, timeout=60
    )
    planned = [tuple(int(x) for x in line.split()) for line in done.stdout.splitlines()]
    assert len(planned) == len(cases)
    for (model, offset, length, write), got in zip(cases, planned, strict=True):
        assert got == member_commands(model, offset, length, write), (model, offset, length)
