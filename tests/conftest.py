"""Shared fixtures: a fresh fixture tree per test, and the hwloc dumps in tests/fixtures/hwloc."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree

# The apply tests' loop device and configuration root, shared by tests/apply and tests/commands;
# `owned`, what a lab test makes under names of its own (tests/owned.py); the host's settings
# every lab test, and the session, must leave as found (tests/host_settings.py).
pytest_plugins = ("tests.apply.fixtures", "tests.owned", "tests.host_settings")

REPO = Path(__file__).resolve().parents[1]
HWLOC_FIXTURES = REPO / "tests" / "fixtures" / "hwloc"
"""hwloc's captures (BSD-3-Clause, its COPYING beside them), copied into the project."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """lab_parallel only sorts lab tests (scripts/test runs "lab and lab_parallel" on workers):
    on a test without `lab` it would run that test in the quick phase and the parallel one.
    whole_host tests run alone, so never on the parallel phase's workers; on any xdist worker
    (`pytest -n 3` over the whole suite) another worker's test may attach or free a loop device
    between their two readings, so there they are skipped, saying where they run."""
    on_worker = "PYTEST_XDIST_WORKER" in os.environ
    alone = pytest.mark.skip(reason="whole_host: runs alone (scripts/test's serial phase, or -n 0)")
    for item in items:
        if item.get_closest_marker("lab_parallel") and not item.get_closest_marker("lab"):
            raise pytest.UsageError(f"{item.nodeid}: marked lab_parallel but not lab")
        if item.get_closest_marker("lab_parallel") and item.get_closest_marker("whole_host"):
            raise pytest.UsageError(f"{item.nodeid}: marked both whole_host and lab_parallel")
        if on_worker and item.get_closest_marker("whole_host"):
            item.add_marker(alone)


@pytest.fixture
def tree(tmp_path: Path) -> SysTree:
    """An empty root to fill with sysfs/procfs files for one test."""
    return SysTree(tmp_path / "root")


HWLOC_DUMPS = sorted(p.name.removesuffix(".tar.bz2") for p in HWLOC_FIXTURES.glob("*.tar.bz2"))


@pytest.fixture(scope="session")
def hwloc_root(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A function: dump name (as in HWLOC_DUMPS) -> the extracted root directory to probe."""
    import subprocess

    base = tmp_path_factory.mktemp("hwloc")
    extracted: dict[str, Path] = {}

    def root_of(name: str) -> Path:
        if name not in extracted:
            dest = base / name
            dest.mkdir()
            # GNU tar unpacks these 30,000-file dumps several times faster than tarfile.
            archive = HWLOC_FIXTURES / f"{name}.tar.bz2"
            subprocess.run(["tar", "-xjf", str(archive), "-C", str(dest)], check=True)
            (top,) = [p for p in dest.iterdir() if p.is_dir()]
            extracted[name] = top
        return extracted[name]

    return root_of


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private IOTUNER_STATE_DIR, so no test touches /var/lib/iotuner."""
    path = tmp_path / "state"
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(path))
    return path


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    """A writable fixture host with every tunable's files (tests/tunables/hostroot.py)."""
    from tests.tunables.hostroot import build_host

    return build_host(tree)
