"""Guards against classes of bug that issue 17 found, kept out by looking at the code itself.

Each check names a construct that turned hostile input into a crash or a write as root, and the
safe replacement every module uses instead (docs/security.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted([*REPO.glob("tuner/**/*.py"), *REPO.glob("probes/**/*.py")])

BANNED = [
    (
        re.compile(r"\.isdigit\(\)"),
        "str.isdigit() is true for '²', which int() refuses: use probes.hostfs.digits()",
        {"probes/hostfs.py"},
    ),
]


@pytest.mark.parametrize(("pattern", "why", "allowed"), BANNED, ids=[b[1][:30] for b in BANNED])
def test_no_module_uses_a_banned_construct(
    pattern: re.Pattern[str], why: str, allowed: set[str]
) -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in SOURCES
        if str(path.relative_to(REPO)) not in allowed
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]
    assert not found, f"{why}: {', '.join(found)}"
