"""A network lab lends its namespaces the congestion controls a real host's initial namespace
may pick (tuner/lab/congestion.py), and the host's allowed list is exactly as it was once every
lab that lent is down: one lab, two in either order, after kill -9 of `lab up`, after a lab's
record was removed by hand, and a name the host has not loaded is refused with nothing changed.

Serial (no lab_parallel): each test reads and changes net.ipv4.tcp_allowed_congestion_control,
one list for the whole host, and holds it to what it read before.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.lab.conftest import kill_9_up_when
from tuner.lab import lab_down, lab_up, parse_spec
from tuner.lab.congestion import CLAIMS
from tuner.lab.model import Lab

pytestmark = pytest.mark.lab

PROC = Path("/proc/sys/net/ipv4")
ALGORITHM = "cubic"  # this host's kernel has it loaded and, by default here, not allowed

PATH = """
name: cc-{ALG}
network: {{rate_mbit: 100, rtt_ms: 2,
          sender: {{tcp_congestion_control: {ALG}}},
          receiver: {{tcp_congestion_control: {ALG}}}}}
"""


def allowed() -> list[str]:
    return (PROC / "tcp_allowed_congestion_control").read_text().split()


def ns_default(ns: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.tcp_congestion_control"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def ns_set(ns: str, name: str) -> subprocess.CompletedProcess[str]:
    """What a trial or plan does in a lab namespace: make `name` its default."""
    return subprocess.run(
        ["ip", "netns", "exec", ns, "sysctl", "-w", f"net.ipv4.tcp_congestion_control={name}"],
        capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture
def restricted() -> Iterator[list[str]]:
    """The allowed list before the test, where ALGORITHM is available but not allowed (as on
    this VM, and on a host whose distribution allows only its default); put back after."""
    if ALGORITHM not in (PROC / "tcp_available_congestion_control").read_text().split():
        pytest.skip(f"{ALGORITHM} is not loaded here")
    before = allowed()
    if ALGORITHM in before:
        pytest.skip(f"{ALGORITHM} is already allowed in a namespace here")
    yield before
    if allowed() != before:  # a failed test must not leave the host changed for the next
        (PROC / "tcp_allowed_congestion_control").write_text(" ".join(before))


def up_in(state: Path, monkeypatch: pytest.MonkeyPatch, name: str = ALGORITHM) -> Lab:
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(state))
    return lab_up(parse_spec(PATH.format(ALG=name), "cc.yaml", f"cc-{name}"))


def down_in(state: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(state))
    return lab_down()


def test_a_path_starting_on_cubic_gets_it_and_the_list_comes_back(
    state: Path, restricted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = up_in(state, monkeypatch)
    assert lab.network is not None
    assert ns_default(lab.network.sender) == ALGORITHM
    assert ns_default(lab.network.receiver) == ALGORITHM
    assert ALGORITHM in allowed()
    assert iotuner("lab", "status").returncode == 0
    removed = down_in(state, monkeypatch)
    assert f"net.ipv4.tcp_allowed_congestion_control: {ALGORITHM} taken back" in removed
    assert allowed() == restricted


def test_status_says_when_the_host_took_the_lent_names_back(
    state: Path, restricted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    up_in(state, monkeypatch)
    (PROC / "tcp_allowed_congestion_control").write_text(" ".join(restricted))  # by hand
    status = iotuner("lab", "status")
    assert status.returncode == 1
    assert "the congestion controls it lent are taken back" in status.stdout
    down_in(state, monkeypatch)
    assert allowed() == restricted


@pytest.mark.parametrize("first", [0, 1], ids=["first-up-down-first", "last-up-down-first"])
def test_two_labs_never_take_back_what_the_other_still_needs(
    tmp_path: Path, restricted: list[str], monkeypatch: pytest.MonkeyPatch, first: int
) -> None:
    states = [tmp_path / "a", tmp_path / "b"]
    try:
        labs = [up_in(s, monkeypatch) for s in states]
        down_in(states[first], monkeypatch)
        still = labs[1 - first].network
        assert still is not None
        # The other lab's trials and plans may still make it the default in its namespaces.
        assert ALGORITHM in allowed()
        assert ns_set(still.sender, "reno").returncode == 0
        setting = ns_set(still.sender, ALGORITHM)
        assert setting.returncode == 0, setting.stderr
        down_in(states[1 - first], monkeypatch)
        assert allowed() == restricted
    finally:
        for s in states:
            if (s / "lab.json").exists():
                down_in(s, monkeypatch)


def test_down_after_kill_9_of_up_takes_the_names_back(state: Path, restricted: list[str]) -> None:
    spec = state.parent / "cc.yaml"
    spec.write_text(PATH.format(ALG=ALGORITHM))
    record = kill_9_up_when(
        state, str(spec), lambda s: s.kind == "congestion" and s.done,
        "lending congestion controls", "congestion step",
    )  # fmt: skip
    assert ALGORITHM in allowed()
    status = iotuner("lab", "status")
    assert status.returncode == 1
    down = iotuner("lab", "down")
    assert down.returncode == 0, down.stderr
    assert f"{ALGORITHM} taken back" in down.stdout
    assert allowed() == restricted
    assert not (CLAIMS / f"{record.lab_id}.json").exists()


def test_a_lab_whose_record_was_deleted_is_taken_back_by_the_next(
    tmp_path: Path, restricted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gone, other = tmp_path / "gone", tmp_path / "other"
    lab = up_in(gone, monkeypatch)
    assert lab.network is not None
    # Its state directory removed by hand: its namespaces outlive it, its claim is stale.
    record = (gone / "lab.json").read_text()
    (gone / "lab.json").unlink()
    try:
        up_in(other, monkeypatch, "reno")
        down_in(other, monkeypatch)
        assert allowed() == restricted
    finally:
        (gone / "lab.json").write_text(record)  # so its namespaces and relay can go
        down_in(gone, monkeypatch)
    assert allowed() == restricted


def test_a_name_not_loaded_here_is_refused_and_nothing_changes(
    state: Path, restricted: list[str]
) -> None:
    spec = state.parent / "cc.yaml"
    spec.write_text(PATH.format(ALG="vegas"))
    if "vegas" in (PROC / "tcp_available_congestion_control").read_text().split():
        pytest.skip("vegas is loaded here")
    result = iotuner("lab", "up", str(spec))
    assert result.returncode != 0
    assert "'vegas' is not available on this host" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert allowed() == restricted
    assert not (state / "lab.json").exists()
