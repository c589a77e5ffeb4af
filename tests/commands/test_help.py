"""Every command's --help shows examples and exit codes, and reads as a man page would."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest
import typer.main

from tuner.cli import Commands, app


def commands() -> list[list[str]]:
    """Every command path, groups included: [[], ['probe'], ['rules'], ['rules', 'list']...]."""
    found: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        found.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def help_text(path: list[str]) -> str:
    env = {**os.environ, "COLUMNS": "100"}
    result = subprocess.run([sys.executable, "-m", "tuner.cli", *path, "--help"], env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("path", commands(), ids=lambda p: " ".join(p) or "iotuner")
def test_help_has_examples_and_exit_codes(path: list[str]) -> None:
    text = help_text(path)
    assert "Examples" in text and f"iotuner {' '.join(path)}".strip() in text
    assert "Exit codes" in text
    assert "<bool>" not in text  # a flag takes no value
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage
    # Every command that prints has --json; `man` prints the manual page, roff being its format.
    if "COMMAND" not in usage and path != ["man"]:
        assert "--json" in text


def test_completion_and_required_arguments_in_capitals() -> None:
    assert "Usage: python -m tuner.cli verify [OPTIONS] PLAN" in help_text(["verify"])
    root = help_text([])
    assert "--install-completion" in root and "--show-completion" in root
    script = subprocess.run([sys.executable, "-m", "tuner.cli", "--show-completion", "bash"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert script.returncode == 0 and "complete " in script.stdout


def test_the_command_list_shows_each_commands_own_first_paragraph() -> None:
    # The root's help lists the commands from summaries kept in tuner/cli.py, so that it
    # imports none of them: each must say what the command's own help says first.
    group = typer.main.get_command(app)
    for name, entry in Commands.lazy.items():
        own = inspect.cleandoc(group.commands[name].help or "").split("\n\n")[0]
        assert entry.summary == " ".join(own.split()), name


def test_help_and_version_import_no_command() -> None:
    code = (
        "import sys\nfrom tuner.cli import main\nsys.argv = ['iotuner', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('tuner.commands.')))"
    )
    for flag in ("--help", "--version"):
        result = subprocess.run([sys.executable, "-c", code, flag], capture_output=True,
                                text=True, timeout=60)  # fmt: skip
        assert result.stdout.splitlines()[-1] == "[]", (flag, result.stderr)
