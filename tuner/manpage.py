"""The iotuner(1) manual page, written from the command line itself: `iotuner man --roff`.

One page for the whole tool, as git(1) or systemctl(1) are: synopsis, every command with its
help, options and examples (tuner/cli_help.py), exit status, files. Generated rather than
written so it cannot drift from `--help`; docs/iotuner.1 is its output, checked by a test.
The command tree comes from the caller (`iotuner man` passes its click context's root): the
commands sit below the root app (pyproject.toml's layers), so nothing here imports it.

Not click-man: it reads click's own classes (`isinstance(param, click.Option)`), and typer,
which vendors its own copy of click, builds commands of other classes, so the page it writes
has no options; nor does it write one page for a whole tree of commands.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from typer.core import TyperGroup

from tuner import __version__
from tuner.cli_help import EXAMPLES

_CODE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*([^*]+)\*\*")

_EXIT = """\
.TP
.B 0
Success: the command did what was asked (advise also when it has findings, so
.B iotuner advise \\-\\-plan\\-out p.yaml && iotuner apply p.yaml
applies them).
.TP
.B 1
Findings (advise \\-\\-exit\\-code: at least one warning or critical finding) or a failed
operation (a trial, an apply, a check, a restore that could not be done; no daemon answering),
or a command whose optional part is not installed (the line names it:
.BR "pip install 'iotuner[tune]'" ).
.TP
.B 2
Bad input: an unknown option value, a plan, rule file, spec or configuration that does not
load (the message names the file and line), a missing device or directory, not root where
root is needed. The host is left unchanged.
"""

_FILES = """\
.TP
.I /var/lib/iotuner/state.db
The journal: every original value and file iotuner changed, kept until it is restored
(\\fBIOTUNER_STATE_DIR\\fR moves the state directory).
.TP
.I /var/lib/iotuner/results/
The last results of tune, bottleneck and sweep, for \\fBiotuner report\\fR.
.TP
.I /etc/iotuner/iotuner.toml
The daemon's configuration.
.TP
.I /etc/sysctl.d/60-iotuner.conf, /etc/udev/rules.d/60-iotuner.rules
What \\fBiotuner apply\\fR writes.
.TP
.I /etc/systemd/system/iotuner-boot.service
The boot unit \\fBiotuner apply\\fR writes and enables (a link in multi-user.target.wants) for
what neither udev nor sysctl.d can hold (IRQ affinity), resolved again at each boot.
"""


_ENVIRONMENT = """\
.TP
.B IOTUNER_STATE_DIR
The state directory (default \\fI/var/lib/iotuner\\fR): the journal, the results, the
lab's state. It must be root's (or the user's) and writable by nobody else; a test or a
second lab uses its own.
.TP
.B IOTUNER_ANSIBLE_PLAYBOOK
The ansible-playbook \\fBiotuner apply\\fR runs (default: the one beside the python running
iotuner, else the one on \\fBPATH\\fR). No other \\fBANSIBLE_*\\fR variable reaches it.
.TP
.B NOTIFY_SOCKET
Set by systemd for \\fBiotuner daemon\\fR: it reports ready and stopping there.
.TP
.B NO_COLOR, COLUMNS
Honoured by the terminal output: no colours; the width to lay tables out in.
"""


def manpage(root: TyperGroup) -> str:
    """The whole page for the command tree `root` (iotuner's root group), in roff (man(7))."""
    lines = [
        f'.TH IOTUNER 1 "" "iotuner {__version__}" "User Commands"',
        ".SH NAME",
        r"iotuner \- advise on and tune a Linux host's I/O settings, and keep them in place",
        ".SH SYNOPSIS",
        r".B iotuner",
        r"[\fB\-\-version\fR] [\fB\-\-install\-completion\fR] [\fB\-\-help\fR]",
        r"\fICOMMAND\fR [\fIOPTIONS\fR] [\fIARGUMENTS\fR]",
        ".SH DESCRIPTION",
        *_paragraphs(root.help or ""),
        ".SH COMMANDS",
    ]
    for path, command in _commands(root, []):
        lines += _command(path, command)
    lines += [".SH EXIT STATUS", _EXIT.rstrip("\n"), ".SH ENVIRONMENT", _ENVIRONMENT.rstrip("\n")]
    lines += [".SH FILES", _FILES.rstrip("\n")]
    lines += [".SH EXAMPLES", *_examples(EXAMPLES.get("iotuner", ()))]
    lines += [
        ".SH SEE ALSO",
        r"\fBsysctl\fR(8), \fBudevadm\fR(8), \fBfio\fR(1), \fBansible-playbook\fR(1);",
        "the documentation under docs/ in iotuner's source (docs/rules.md lists every rule",
        "with the paper it cites).",
    ]
    return "\n".join(lines) + "\n"


def _commands(group: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    """(path, command) for every visible command below `group`, groups' own commands after."""
    found = []
    for name, command in (getattr(group, "commands", None) or {}).items():
        if getattr(command, "hidden", False):
            continue
        if getattr(command, "commands", None):
            found += _commands(command, [*path, name])
        else:
            found.append(([*path, name], command))
    return found


def _command(path: list[str], command: Any) -> list[str]:
    name = " ".join(path)
    arguments = [
        p.name.upper() if p.required else f"[{p.name.upper()}]"
        for p in command.params
        if p.param_type_name == "argument"
    ]
    lines = [".SS " + _escape(f"iotuner {name}")]
    lines.append(
        r"\fBiotuner " + _escape(name) + r"\fR [\fIOPTIONS\fR] " + _escape(" ".join(arguments))
    )
    lines += _paragraphs(command.help or "")
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        lines += [".TP", _term(param), *_text(param.help or "")]
    key = "lab status" if path == ["lab", "status"] else path[-1]  # as cli_help keys them
    if EXAMPLES.get(key):
        lines += [".PP", "Examples:", *_examples(EXAMPLES[key])]
    return lines


def _term(param: Any) -> str:
    if param.param_type_name == "argument":
        return r"\fI" + _escape(param.name.upper()) + r"\fR"
    names = ", ".join(r"\fB" + _escape(opt) + r"\fR" for opt in param.opts)
    if getattr(param, "is_flag", False):
        return names
    # The metavar --help shows (HOST[:PORT]), else the option's name.
    shown = getattr(param, "metavar", None) or param.name.upper()
    return names + r" \fI" + _escape(shown) + r"\fR"


def _paragraphs(text: str) -> list[str]:
    lines: list[str] = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.strip():
            lines += [".PP", *_text(paragraph)]
    return lines


def _text(text: str) -> list[str]:
    """Prose as roff: one line per source line, code in bold, no line starting with a dot."""
    out = []
    for line in " ".join(text.split()).split(". "):
        line = line.strip()
        if line:
            out.append(_inline(line if line.endswith(".") else line + "."))
    if out and not text.rstrip().endswith("."):
        out[-1] = out[-1][:-1]
    return out


def _inline(text: str) -> str:
    text = _escape(text)
    text = _CODE.sub(lambda m: r"\fB" + m.group(1) + r"\fR", text)
    text = _STRONG.sub(lambda m: r"\fB" + m.group(1) + r"\fR", text)
    return "\\&" + text if text.startswith((".", "'")) else text


def _examples(commands: tuple[str, ...]) -> list[str]:
    return [".PP", ".RS 4", ".nf", *(_escape(c) for c in commands), ".fi", ".RE"]


def _escape(text: str) -> str:
    """roff's specials: backslash, and '-' as a real minus (options copy-paste right)."""
    return text.replace("\\", "\\e").replace("-", "\\-")
