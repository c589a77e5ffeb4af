"""Run a generated suite with pytest and testinfra; one outcome per check, from a JUnit XML.

pytest runs in a subprocess from the suite's own directory with its own ini file, so neither
the caller's pytest configuration nor a conftest.py above the directory takes part. It runs as
root, and `python -m pytest` imports from its working directory (a pytest.py there) and pytest
loads the conftest.py beside the suite: that directory is a fresh temporary one, or a `--keep`
directory that is new (made 0700) or empty and iotuner's own (`keep_directory`), never one
another user can write. The child runs with -P (no working directory on sys.path). Outcomes
are read from `--junitxml` (each test records its check id and host as properties), not from
pytest's terminal output, whose format changes between versions.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tuner.apply.render import Rendered
from tuner.errors import BadInput, IotunerError
from tuner.outfile import write_file
from tuner.trust import Untrusted, private_dir, trusted_dir
from tuner.verify.suite import SUITE_NAME, Check, checks, suite_source

JUNIT_NAME = "junit.xml"
# xunit1 keeps the <properties> a test records (xunit2 drops them with a warning).
INI = "[pytest]\njunit_family = xunit1\naddopts = -p no:cacheprovider\n"
INI_NAME = "pytest.ini"
# What an earlier `verify --keep` left in the directory: it may be used again.
_KEPT = frozenset({SUITE_NAME, INI_NAME, JUNIT_NAME})


@dataclass(frozen=True)
class Outcome:
    """One check on one host: passed, or the one-line reason it did not."""

    check: str
    host: str
    passed: bool
    message: str = ""


@dataclass(frozen=True)
class Verification:
    """A rendered plan's checks and what running them gave, one outcome per check and host."""

    checks: tuple[Check, ...]
    outcomes: tuple[Outcome, ...]

    @property
    def passed(self) -> bool:
        """True when every check ran and passed (a check that did not run is a failure)."""
        ran = {o.check for o in self.outcomes}
        return all(o.passed for o in self.outcomes) and all(c.id in ran for c in self.checks)

    def failures(self) -> list[str]:
        """One line per failed check (and per check that never ran)."""
        ran = {o.check for o in self.outcomes}
        lines = [o.message or f"{o.check}: failed" for o in self.outcomes if not o.passed]
        lines += [f"{c.title}: not run" for c in self.checks if c.id not in ran]
        return lines


def verify(
    rendered: Rendered,
    *,
    root: Path = Path("/"),
    title: str = "a plan",
    hosts: str = "local://",
    inventory: Path | None = None,
    keep: Path | None = None,
) -> Verification:
    """Generate the suite for `rendered` and run it: the whole of `iotuner verify`'s work."""
    found = checks(rendered, root)
    outcomes = run_suite(
        suite_source(found, title=title), hosts=hosts, inventory=inventory, keep=keep
    )
    return Verification(found, outcomes)


def run_suite(
    source: str,
    *,
    hosts: str = "local://",
    inventory: Path | None = None,
    keep: Path | None = None,
    timeout_s: float = 600.0,
) -> tuple[Outcome, ...]:
    """Write the suite (to `keep`, or a temporary directory) and run it against `hosts`.

    `hosts` is testinfra's `--hosts` ("local://", "ansible://web1,ansible://web2"); remote
    hosts are reached through Ansible with `inventory`. IotunerError when pytest itself fails
    (not when a check does: that is an outcome).
    """
    if importlib.util.find_spec("testinfra") is None:
        raise IotunerError("verify needs pytest-testinfra: pip install pytest-testinfra")
    if inventory is not None and not inventory.is_file():
        raise BadInput(f"--inventory {inventory}: no such file")
    if keep is not None:
        return _run_in(keep_directory(keep), source, hosts, inventory, timeout_s)
    with tempfile.TemporaryDirectory(prefix="iotuner-verify-") as tmp:
        return _run_in(Path(tmp), source, hosts, inventory, timeout_s)


def keep_directory(keep: Path) -> Path:
    """The `--keep` directory, absolute, once it is safe to run pytest from as root: a new
    one (created 0700, with any missing parent), or an existing one of root's or ours that
    nobody else may write, not a link, holding nothing but what an earlier `verify --keep`
    wrote, under directories nobody else may swap. Untrusted (one line, exit 2) otherwise."""
    path = Path(os.path.abspath(keep))
    what = "the verification suite"
    try:
        if not os.path.lexists(path):
            return private_dir(path, what)
        trusted_dir(path, what)
        extra = sorted(set(os.listdir(path)) - _KEPT)
    except Untrusted as err:
        raise Untrusted(f"--keep {keep}: {err}") from None
    except OSError as err:
        raise BadInput(f"--keep {keep}: cannot use it ({err.strerror or err})") from None
    if extra:
        raise Untrusted(f"--keep {keep}: holds {extra[0]!r} (and {len(extra) - 1} more): "
                        "name a new or empty directory of your own")  # fmt: skip
    return path


def _run_in(
    directory: Path, source: str, hosts: str, inventory: Path | None, timeout_s: float
) -> tuple[Outcome, ...]:
    directory = Path(os.path.abspath(directory))  # pytest runs from inside it
    suite = write_file(directory / SUITE_NAME, source, mode=0o600, what="verification suite")
    ini = write_file(directory / INI_NAME, INI, mode=0o600, what="pytest configuration")
    junit = directory / JUNIT_NAME
    junit.unlink(missing_ok=True)
    # -P: the working directory is not on sys.path; --confcutdir: no conftest.py above it.
    command = [sys.executable, "-P", "-m", "pytest", "-c", str(ini), "--rootdir", str(directory),
               f"--confcutdir={directory}", "-p", "no:cacheprovider", "-q", "--no-header",
               "-p", "testinfra.plugin", f"--junitxml={junit}", f"--hosts={hosts}"]  # fmt: skip
    if inventory is not None:
        command.append(f"--ansible-inventory={inventory.resolve()}")
    command.append(str(suite))
    # Only testinfra: other installed plugins (hypothesis takes 1.5 s to import) add nothing.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONSAFEPATH": "1"}
    try:
        done = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        raise IotunerError(f"the verification suite did not finish in {timeout_s:g} s") from None
    # 0: all passed; 1: some failed; 5: no tests (nothing to check). Anything else is pytest's
    # own failure: a usage error, a suite that does not import, an interrupted run.
    if done.returncode == 5:
        return ()
    if done.returncode not in (0, 1) or not junit.exists():
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
        raise IotunerError(
            f"pytest could not run the verification suite (exit {done.returncode}): "
            + " | ".join(tail)
        )
    return parse_junit(junit.read_text())


def parse_junit(text: str) -> tuple[Outcome, ...]:
    """Outcomes from pytest's JUnit XML: passed unless a failure, error or skip is recorded."""
    outcomes = []
    for case in ET.fromstring(text).iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        name = case.get("name", "")
        # A test that errored before it recorded anything (a host it could not reach) still
        # says which check it was in its parameter id: "test_file[local-/etc/...]".
        check = props.get("check") or name.partition("[")[2].rstrip("]")
        host = props.get("host") or ""
        problem = next(
            (
                case.find(tag)
                for tag in ("failure", "error", "skipped")
                if case.find(tag) is not None
            ),
            None,
        )
        if problem is None:
            outcomes.append(Outcome(check, host, True))
            continue
        message = (problem.get("message") or problem.text or problem.tag).strip()
        if problem.tag == "error":
            message = f"error: {message.splitlines()[-1] if message else 'unknown'}"
        elif problem.tag == "skipped":
            message = f"skipped: {message}"
        # pytest.fail(..., pytrace=False) gives the bare line; an assertion adds its type.
        message = message.removeprefix("Failed: ").splitlines()[0] if message else ""
        outcomes.append(Outcome(check, host, False, message))
    return tuple(outcomes)
