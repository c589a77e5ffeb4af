"""A real network namespace for a test: made with `ip netns add`, deleted however the test ends.

The name is unique to the xdist worker, the process and the test (tests/owned.py, `unique`), so
tests running at the same time, and the labs' own namespaces (`iotuner-LABID-ROLE`), are never
touched.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.owned import unique


def sysctl_in(name: str, key: str) -> str:
    """`key` as namespace `name` holds it, read with the tool a user would use."""
    out = subprocess.run(["ip", "netns", "exec", name, "sysctl", "-n", key],
                         capture_output=True, text=True, check=True, timeout=10).stdout  # fmt: skip
    return " ".join(out.split())


def host_sysctl(key: str) -> str:
    """`key` as the host (the initial namespace) holds it."""
    return " ".join(Path("/proc/sys", *key.split(".")).read_text().split())


@contextlib.contextmanager
def network_namespace() -> Iterator[str]:
    """A fresh namespace's name while the block runs; it is deleted afterwards."""
    name = unique("iotuner-test-")
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=10)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=10)
