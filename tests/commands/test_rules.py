"""`iotuner rules list` names every rule whole, at 80 columns and in a pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_rules_list_prints_every_id_whole_at_80_columns() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    run = [sys.executable, "-m", "tuner.cli", "rules", "list"]
    listed = subprocess.run(run, capture_output=True, text=True, env=env, check=True).stdout
    ids = [r["id"] for r in json.loads(subprocess.run(
        [*run, "--json"], capture_output=True, text=True, check=True).stdout)]  # fmt: skip
    starts = [line.split()[0] for line in listed.splitlines()[1:] if not line.startswith(" ")]
    assert starts == ids
    assert "…" not in listed
