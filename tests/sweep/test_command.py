"""`iotuner sweep` as a user runs it: bad input in one line, the JSON saved for the report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import iotuner
from tests.loopdev import loop_device


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = [
        (("sweep", str(tmp_path)), "not a block device"),
        (("sweep", "/dev/null", "--sizes", "4x"), "--sizes"),
        (("sweep", "/dev/null", "--depths", "0"), "--depths"),
        (("sweep", "/dev/null", "--rw", "write"), "reads only"),
    ]
    for args, message in cases:
        done = iotuner(*args, state=tmp_path / "state", timeout=60)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "state" / "results").exists()


def test_json_on_a_loop_device_is_saved_for_the_report(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with loop_device(size_mb=32) as name:
        done = iotuner("sweep", name, "--sizes", "4k,64k", "--depths", "1,2", "--runtime", "0.3",
                       "--json", state=state, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    saved = json.loads((state / "results" / "sweep.json").read_text())
    assert saved.pop("measured_on")["hostname"], "saved with the host it was measured on"
    origin = saved.pop("origin")  # when, by which command, on what (issue 30 point 7)
    assert origin["command"].startswith("iotuner sweep") and origin["lab"] is False
    assert saved == doc
    assert doc["device"] == f"/dev/{name}" and doc["rw"] == "read" and doc["direct"] is True
    assert doc["sizes"] == [4096, 65536] and doc["depths"] == [1, 2]
    assert [(c["size"], c["depth"]) for c in doc["cells"]] == [
        (4096, 1), (65536, 1), (4096, 2), (65536, 2),
    ]  # fmt: skip
    assert [row["depth"] for row in doc["by_depth"]] == [1, 2]
    assert [column["size"] for column in doc["by_size"]] == [4096, 65536]
    assert doc["plateau"]["mbps"] > 0 and doc["half_power"]["size"] in (4096, 65536)
    assert doc["summary"].startswith(f"/dev/{name}: plateau ")


def test_table_for_people(tmp_path: Path) -> None:
    with loop_device(size_mb=32) as name:
        done = iotuner("sweep", f"/dev/{name}", "--sizes", "4k,1m", "--depths", "1",
                       "--runtime", "0.3", state=tmp_path / "state", timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for text in ("depth", "4K", "1M", "half-power", "stops growing", "plateau", "half power"):
        assert text in done.stdout, text
