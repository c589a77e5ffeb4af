"""`lab_session`: a lab for the length of a `with` block (the tune command's main job)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tuner.lab.build import lab_up
from tuner.lab.model import Lab
from tuner.lab.spec import load_spec
from tuner.lab.teardown import lab_down


@contextmanager
def lab_session(name_or_path: str) -> Iterator[Lab]:
    """Bring up a built-in spec (by name) or a spec file, yield the lab, always tear it down."""
    lab = lab_up(load_spec(name_or_path))
    try:
        yield lab
    finally:
        lab_down()
