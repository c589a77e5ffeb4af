"""Exit 0 when `pip install -e ".[test]"` would change nothing: iotuner is installed editable
from this checkout, with the console scripts pyproject.toml names, and every requirement of the
test extra (and the extras it pulls in) is installed at a version it accepts. Exit 1 otherwise,
and scripts/setup --dev runs pip.

Run as `python3 scripts/installed_here.py` from the checkout's top; standard library and
`packaging` only (pip's own dependency, present wherever pip is).
"""

from __future__ import annotations

import json
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

TOP = Path(__file__).resolve().parents[1]


def requirements(project: dict[str, Any], extras: list[str]) -> list[Requirement]:
    """The project's requirements with `extras`, its own extras ("iotuner[all]") expanded."""
    name = canonicalize_name(project["name"])
    optional = project.get("optional-dependencies", {})
    found = [Requirement(line) for line in project.get("dependencies", [])]
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in optional.get(extra, []):
            req = Requirement(line)
            if canonicalize_name(req.name) == name:
                pending.extend(req.extras)
            else:
                found.append(req)
    return found


def holds(req: Requirement) -> bool:
    """True when `req` does not apply here or is installed at a version it accepts."""
    if req.marker is not None and not req.marker.evaluate():
        return True
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        return False
    return req.specifier.contains(version, prereleases=True)


def main() -> int:
    """0: the editable install of this checkout is current; 1: pip must run."""
    project = tomllib.loads((TOP / "pyproject.toml").read_text())["project"]
    try:
        dist = metadata.distribution(project["name"])
    except metadata.PackageNotFoundError:
        return 1
    url = json.loads(dist.read_text("direct_url.json") or "{}")
    if url.get("url") != TOP.as_uri() or not url.get("dir_info", {}).get("editable"):
        return 1
    if dist.version != project["version"]:
        return 1
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    if scripts != project.get("scripts", {}):
        return 1
    return 0 if all(holds(r) for r in requirements(project, ["test"])) else 1


if __name__ == "__main__":
    sys.exit(main())
