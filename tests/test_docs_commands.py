"""What the docs show can be typed: every `iotuner ...` command in README.md and docs/*.md names
a command that exists and only options it has, and every rule id the docs name is in rules/.

A renamed option or rule left behind in a doc (issue 30: plan-format's `shallow-queue`) fails
here, not in a user's shell."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from tuner.cli import app

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Code spans and fenced blocks: where a doc shows what to type. Prose that says "iotuner
# applies" is not a command.
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
# A command starts a line (after a prompt, sudo or VAR=value) or follows a shell operator:
# "a killed iotuner left ..." in a block of output is not one.
_COMMAND = re.compile(
    r"(?:^(?:[$#] )?(?:sudo )?(?:[A-Z_]+=\S+ )*|&& |; |\| |\$\()iotuner((?: +\S+)+)"
)


def _code(text: str) -> list[str]:
    """Every line of code the doc shows: fenced lines, then inline spans."""
    lines = [line for block in _FENCE.findall(text) for line in block.splitlines()]
    return lines + _SPAN.findall(_FENCE.sub("", text))


def _words(rest: str) -> list[str]:
    """The words of one command, up to where the shell or a comment takes over; a synopsis's
    `[--a X | --b Y]` keeps both sides."""
    words: list[str] = []
    depth = 0
    for word in rest.split():
        if depth == 0 and (word.startswith("#") or word in {"|", "||", "&&", ";", ">", "2>"}):
            break
        depth += word.count("[") - word.count("]")
        words.append(word.strip("[]()`,;"))
    return words


def commands() -> list[tuple[str, list[str]]]:
    """(where, words after `iotuner`) for every command the docs show."""
    found = []
    for doc in DOCS:
        for line in _code(doc.read_text()):
            for match in _COMMAND.finditer(line.strip()):
                words = _words(match.group(1))
                if words:
                    found.append((f"{doc.name}: {line.strip()}", words))
    return found


def _is_group(command: Any) -> bool:
    return hasattr(command, "get_command")  # typer's own click: no click.Group to test against


def _context(command: Any) -> Any:
    return command.context_class(command)


def _resolve(words: list[str]) -> tuple[Any, list[str], str]:
    """The command the words name (following groups), the words after it, and its path."""
    command: Any = typer.main.get_command(app)
    path = "iotuner"
    rest = list(words)
    while _is_group(command) and rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
        found = command.get_command(_context(command), rest[0])
        if found is None:
            break
        path, command, rest = f"{path} {rest[0]}", found, rest[1:]
    return command, rest, path


def _options(command: Any) -> set[str]:
    ctx = _context(command)
    names = {"--help", "-h"}
    for param in command.get_params(ctx):
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


SHOWN = commands()


def test_the_docs_show_commands_at_all() -> None:
    """The scan finds the commands (a broken pattern would pass every check below vacuously)."""
    assert len(SHOWN) > 100
    assert {w[0] for _, w in SHOWN} >= {"probe", "advise", "tune", "apply", "rollback", "lab"}


@pytest.mark.parametrize(("where", "words"), SHOWN, ids=[w for w, _ in SHOWN])
def test_every_command_in_the_docs_exists_with_its_options(where: str, words: list[str]) -> None:
    command, rest, path = _resolve(words)
    if _is_group(command):
        sub = next((w for w in rest if not w.startswith("-")), None)
        assert sub is None or not re.fullmatch(r"[a-z][a-z-]*", sub) or sub in {"COMMAND"}, (
            f"{where}: `{path}` has no command {sub!r}"
        )
    known = _options(command)
    for word in rest:
        if word == "--":
            break
        option = word.split("=", 1)[0]
        if re.fullmatch(r"--?[a-z][a-z0-9-]*", option):
            assert option in known, f"{where}: `{path}` has no option {option}"


RULE_IDS = {
    rule["id"]
    for file in sorted((REPO / "rules").glob("*.yaml"))
    for rule in (yaml.safe_load(file.read_text()) or {}).get("rules", []) or []
    if isinstance(rule, dict) and "id" in rule
}
# Where a doc names a rule: a plan's reason, `rules show ID`.
_NAMED = re.compile(r"(?:reason: |rules show )([a-z][a-z0-9-]+)")
NOT_RULES = {"tune", "daemon"}  # a plan's reason may be the tune or the daemon, not a rule


def test_every_rule_id_the_docs_name_exists() -> None:
    assert len(RULE_IDS) > 30
    missing = sorted(
        f"{doc.name}: {name}"
        for doc in DOCS
        for name in _NAMED.findall(doc.read_text())
        if name not in RULE_IDS and name not in NOT_RULES
    )
    assert not missing, missing
