"""tests/host_settings.py: what moved on the host, and after which lab test; a nested session
whose watch reads a fixture tree fails when a lab test leaves a value changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.host_settings import moved, read_settings
from tests.sysfs_tree import SysTree

pytest_plugins = ("pytester",)

VM = {"dirty_ratio": 20, "dirty_background_ratio": 10, "dirty_bytes": 0,
      "dirty_background_bytes": 0, "dirty_expire_centisecs": 3000,
      "dirty_writeback_centisecs": 500}  # fmt: skip


def host(tree: SysTree) -> SysTree:
    tree.files("proc/sys/vm", VM)  # type: ignore[arg-type]
    tree.file("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456")
    return tree


def test_a_host_left_as_found_has_nothing_moved(tree: SysTree) -> None:
    before = read_settings(host(tree).root)
    assert before["net.ipv4.tcp_rmem"] == "4096 131072 6291456"  # as sysctl prints it
    assert "net.core.rmem_max" not in before  # a key this kernel lacks is left out
    assert moved(before, read_settings(tree.root)) == []


def test_tuneds_ratios_left_behind_are_named(tree: SysTree) -> None:
    before = read_settings(host(tree).root)
    tree.file("proc/sys/vm/dirty_ratio", 40).file("proc/sys/vm/dirty_bytes", 0)
    tree.file("proc/sys/net/ipv4/tcp_rmem", "4096 131072 33554432")
    assert moved(before, read_settings(tree.root)) == [
        "vm.dirty_ratio 20 -> 40", "net.ipv4.tcp_rmem 4096 131072 6291456 -> 4096 131072 33554432"
    ]  # fmt: skip


INNER_CONFTEST = """
pytest_plugins = ("tests.host_settings",)


def pytest_configure(config):
    config.addinivalue_line("markers", "lab: a lab test")
    config.addinivalue_line("markers", "lab_parallel: a lab test safe beside others")
"""
INNER_TESTS = """
import os
from pathlib import Path

import pytest

RATIO = Path(os.environ["IOTUNER_TEST_HOST_ROOT"], "proc/sys/vm/dirty_ratio")


@pytest.mark.lab
def test_puts_back():
    RATIO.write_text("40\\n")
    RATIO.write_text("20\\n")


@pytest.mark.lab
def test_leaves_tuneds_ratio():
    RATIO.write_text("40\\n")


@pytest.mark.lab
def test_after():
    pass
"""


def nested_session(
    pytester: pytest.Pytester, tree: SysTree, monkeypatch: pytest.MonkeyPatch, select: str
) -> pytest.RunResult:
    """A session of INNER_TESTS (those `select` names) whose watch reads the fixture tree."""
    host(tree)
    monkeypatch.setenv("IOTUNER_TEST_HOST_ROOT", str(tree.root))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", select)


def test_a_session_whose_lab_test_left_a_setting_fails_naming_the_test(
    pytester: pytest.Pytester, tree: SysTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = nested_session(pytester, tree, monkeypatch, "puts_back or leaves or after")
    result.assert_outcomes(passed=3, errors=1)
    out = result.stdout.str()
    assert "the session left the host's settings changed: vm.dirty_ratio 20 -> 40" in out
    assert "after test_inner.py::test_leaves_tuneds_ratio: vm.dirty_ratio 20 -> 40" in out
    assert "test_puts_back:" not in out  # a test that put its value back is not named
    assert (tree.root / "proc/sys/vm/dirty_ratio").read_text() == "40\n"  # nothing written


def test_a_session_that_put_everything_back_passes(
    pytester: pytest.Pytester, tree: SysTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    nested_session(pytester, tree, monkeypatch, "puts_back or after").assert_outcomes(passed=2)
