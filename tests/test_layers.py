"""pyproject.toml's layers contract names every module of the house, so none escapes it.

import-linter checks only the modules a layers contract names (a containerless contract cannot
be exhaustive): a new `tuner/foo.py` no layer names could import the command line from below and
`lint-imports` would still pass. This test fails on such a module, and on a layer that names a
module that is gone.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONTRACT = "the house's layers, from the command line down to the probes and the errors under them"


def _layers() -> list[set[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["name"] == CONTRACT)
    assert contract["type"] == "layers"
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in contract["layers"]]


def _house() -> set[str]:
    """Every module and package directly under tuner/, and the probes package."""
    names = {"probes"}
    for path in (REPO / "tuner").iterdir():
        if path.suffix == ".py" and path.stem not in {"__init__", "__main__"}:
            names.add(f"tuner.{path.stem}")
        elif (path / "__init__.py").is_file():
            names.add(f"tuner.{path.name}")
    return names


def test_every_module_of_the_house_is_in_exactly_one_layer() -> None:
    layers = _layers()
    named = [name for layer in layers for name in layer]
    assert len(named) == len(set(named)), "a module is named in two layers"
    house = _house()
    assert house - set(named) == set(), "modules no layer names (add each to pyproject's layers)"
    assert set(named) - house == set(), "layers naming a module that is not there"


def test_the_command_line_is_on_top_and_the_probes_below_all_of_tuner_but_what_they_borrow() -> (
    None
):
    layers = _layers()
    assert layers[0] == {"tuner.cli"} and layers[1] == {"tuner.commands"}
    below_probes = [name for layer in layers[layers.index({"probes"}) + 1 :] for name in layer]
    assert below_probes == ["tuner.outfile", "tuner.trust", "tuner.errors"]
