"""tests/owned.py: names no other worker or test shares, and a teardown that goes on past a
failure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.owned import IFNAMSIZ, Owned, unique


def test_names_differ_within_a_process_and_across_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = unique("iot", IFNAMSIZ - 1), unique("iot", IFNAMSIZ - 1)
    assert first != second
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw7")
    other = unique("iot", IFNAMSIZ - 1)
    assert other.startswith("iot7") and other not in (first, second)
    # An interface name with its peer's "p" still fits the kernel's 15 characters.
    assert len(f"{other}p") <= IFNAMSIZ


def test_a_name_too_long_is_refused_not_cut() -> None:
    with pytest.raises(ValueError, match="longer than 8 characters"):
        unique("iotuner-", 8)


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace and veth, deleted by the test itself
def test_teardown_goes_on_past_a_failing_undo(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: makes a namespace and a veth")
    made = Owned(tmp_path)
    namespace = made.namespace()
    name, _ = made.veth(namespace)

    def fails() -> None:
        raise RuntimeError("an undo that fails")

    made.on_teardown(fails)  # runs first (newest first), and must not stop the others
    with pytest.raises(RuntimeError, match="an undo that fails"):
        made.close()
    assert not Path(f"/sys/class/net/{name}").exists()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert namespace not in listed.split()
