"""One way to the live host: no production module opens a reader or writer of `/` itself.

Commands build their host once (`probes.host_root.live_host()`, `tuner.tunables.sysroot.
live_sysroot()`, or from `--root`) and pass it down; a `HostFS("/")` deep in a module would
read the live machine while the command was given a capture (issue 20). The check parses each
module and flags a host-access class built with `/` or with its root left to the default.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    [*REPO.glob("tuner/**/*.py"), *REPO.glob("probes/**/*.py"),
     *REPO.glob("benchmarks/**/*.py"), *REPO.glob("playbooks/**/*.py")]
)  # fmt: skip

HOST_CLASSES = {"HostFS", "SysRoot", "Tunables", "TunableEngine"}
"""Everything that reads or writes a host below a root given as its first argument."""
ALLOWED = {"probes/host_root.py", "tuner/tunables/sysroot.py"}
"""The named constructors of the live host: `live_host()` and `live_sysroot()`."""


def _is_slash(node: ast.expr) -> bool:
    """`"/"` or `Path("/")` (PurePath, PosixPath alike)."""
    if isinstance(node, ast.Constant):
        return node.value == "/"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id.endswith("Path")
        and len(node.args) == 1
        and _is_slash(node.args[0])
    )


def live_constructions(source: str) -> list[int]:
    """Line numbers where `source` builds a host-access class over `/` or the default root."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name not in HOST_CLASSES:
            continue
        root = node.args[0] if node.args else None
        root = next((k.value for k in node.keywords if k.arg == "root"), root)
        if root is None or _is_slash(root):
            lines.append(node.lineno)
    return lines


def test_the_scan_finds_each_spelling_of_the_live_root() -> None:
    planted = "\n".join(
        [
            'fs = HostFS("/")',
            'fs = HostFS(Path("/"))',
            "sys = SysRoot()",
            'sys = sysroot.SysRoot(root="/")',
            "tunables = Tunables()",
            "engine = TunableEngine(PurePosixPath('/'), journal)",
        ]
    )
    assert live_constructions(planted) == [1, 2, 3, 4, 5, 6]


def test_the_scan_passes_a_root_handed_down() -> None:
    handed = "\n".join(
        ["fs = HostFS(root)", "sys = SysRoot(Path(params['root']))", "TunableEngine(host, j)"]
    )
    assert live_constructions(handed) == []


def test_no_module_but_the_host_access_point_opens_the_live_root() -> None:
    found = [
        f"{rel}:{line}"
        for path in SOURCES
        if (rel := str(path.relative_to(REPO))) not in ALLOWED
        for line in live_constructions(path.read_text())
    ]
    assert not found, (
        "build the live host once at the command's boundary (live_host(), live_sysroot()) "
        f"and pass it down: {', '.join(found)}"
    )
