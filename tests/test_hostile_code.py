"""Guards against classes of bug that issue 17 found, kept out by looking at the code itself.

Each check names a construct that turned hostile input into a crash or a write as root, and the
safe replacement every module uses instead (docs/security.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    [*REPO.glob("tuner/**/*.py"), *REPO.glob("probes/**/*.py"),
     *REPO.glob("playbooks/**/*.py")]
)  # fmt: skip

BANNED = [
    (
        re.compile(r"\.isdigit\(\)"),
        "str.isdigit() is true for '²', which int() refuses: use probes.hostfs.digits()",
        {"probes/hostfs.py"},
    ),
    (
        re.compile(r"write_to_textfile"),
        "prometheus_client.write_to_textfile opens a fixed temporary name with open(): "
        "a planted link is followed (use tuner/daemon/metrics.py _write_atomically)",
        set(),
    ),
    (
        re.compile(r"ThreadingMixIn"),
        "a thread per connection lets one local user start any number of them "
        "(use tuner/daemon/metrics.py _BoundedServer)",
        set(),
    ),
    (
        re.compile(r"yaml\.(unsafe_|full_)?load(_all)?\("),
        "yaml.load builds arbitrary objects from a file: use tuner.yaml_text.load_yaml",
        {"tuner/yaml_text.py"},  # the one bounded SafeLoader
    ),
    (
        re.compile(r"yaml\.(safe_load|compose|C?SafeLoader\b)"),
        "an unbounded YAML loader: a few KB of aliases expand to billions of nodes and deep "
        "nesting is a RecursionError (issue 27); use tuner.yaml_text.load_yaml",
        {"tuner/yaml_text.py"},
    ),
    (
        re.compile(r"shell=True|os\.system\(|os\.popen\("),
        "a shell parses its command line: pass an argument list",
        set(),
    ),
    (
        re.compile(r'\.print\(f"[^"]*\[[a-z /]+\][^"]*\{'),
        "an f-string of rich markup interpolating a value: `[/]` in the value is a MarkupError "
        "and `[red]` vanishes (issue 27); print a Text (tuner.console.plain, print_error)",
        set(),
    ),
    (
        re.compile(r"os\.replace\(|\.replace\(out\)|tempfile\.mkstemp|NamedTemporaryFile"),
        "an output file written beside its target by hand: a temporary of a predictable name "
        "is a link anybody may plant first (issue 27); use tuner.outfile.write_file",
        {"tuner/outfile.py", "playbooks/library/iotuner_retarget.py"},  # mkstemp: random, O_EXCL
    ),
    (
        re.compile(r'"type": "path"'),
        "Ansible expands $VAR and ~ in path options: the role's modules take strings",
        set(),
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
