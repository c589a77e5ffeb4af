"""A testinfra suite generated from a rendered plan: one test per live setting and managed file.

The suite is plain Python source with no import of iotuner: it reads kernel files and managed
files through testinfra's `host` fixture, so the same module checks this host (`local://`) or
another one (`ansible://HOST`), and a copy kept with `iotuner verify --keep` runs with plain
`pytest --hosts=local://` long after. Each value is normalised as tuner's tunables read it (the
scheduler's [active] name, a triple as three ints, a CPU list in the kernel's compact form), and
each failure is one line that names the setting or file and what it holds instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probes.hostfs import parse_cpulist
from tuner.apply.render import ManagedFile, Rendered
from tuner.tunables.access import format_value
from tuner.tunables.base import Value
from tuner.tunables.cpu import CPU_DIR, Governor
from tuner.tunables.irq import format_cpulist
from tuner.tunables.registry import TUNABLES
from tuner.tunables.sysroot import SysRoot

SUITE_NAME = "test_iotuner_verify.py"


@dataclass(frozen=True)
class Read:
    """One kernel file to read, how to normalise what it holds, and what it should hold."""

    path: str
    kind: str  # int | scheduler | name | triple | cpulist
    expected: Value


@dataclass(frozen=True)
class Check:
    """One test of the suite: a live setting (its reads) or a managed file.

    `id` is the test's id ("block.read_ahead_kb@loop3", or the file's path); `title` says the
    same for people ("block.read_ahead_kb on loop3"); `expected` is what should be there, in
    words.
    """

    id: str
    kind: str  # "live" | "file"
    title: str
    expected: str
    reads: tuple[Read, ...] = ()
    file: ManagedFile | None = None


def read_kind(key: str) -> str:
    """How a key's kernel file is normalised before comparing."""
    if key == "block.scheduler":
        return "scheduler"
    if key == "irq.affinity":
        return "cpulist"
    kind = TUNABLES[key].kind
    if kind == "triple":
        return "triple"
    if kind == "choice":
        return "name"
    return "int"


def live_checks(rendered: Rendered, root: Path = Path("/")) -> tuple[Check, ...]:
    """One check per live setting, in apply order.

    IRQ affinity and the CPU governor span several files (one per IRQ, one per CPU): their
    expected layout is split into one read per file, the CPUs taken from the host at `root`.
    """
    sys = SysRoot(root)
    found = []
    for setting in rendered.live:
        expected = setting.expected
        if setting.key == "irq.affinity":
            reads = tuple(
                Read(f"/proc/irq/{irq}/smp_affinity_list", "cpulist", cpus)
                for irq, cpus in _irq_layout(str(expected))
            )
        elif setting.key == "cpu.governor":
            layout = Governor().layout(sys, setting.target, str(expected))
            reads = tuple(
                Read(f"/{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor", "name", name)
                for cpu, name in layout.items()
            )
        else:
            reads = (Read(setting.path, read_kind(setting.key), expected),)
        found.append(
            Check(
                id=f"{setting.key}@{setting.target}",
                kind="live",
                title=f"{setting.key} on {setting.target}",
                expected=format_value(expected),
                reads=reads,
            )
        )
    return tuple(found)


def _irq_layout(text: str) -> list[tuple[int, str]]:
    """ "35:0 36:1-3" -> [(35, "0"), (36, "1-3")], each CPU list in the kernel's form."""
    pairs = []
    for word in text.split():
        irq, _, cpus = word.partition(":")
        pairs.append((int(irq), format_cpulist(parse_cpulist(cpus))))
    return pairs


def file_checks(rendered: Rendered) -> tuple[Check, ...]:
    """One check per managed file: its exact content and mode, a link's target, or absence."""
    found = []
    for managed in rendered.files:
        if managed.link is not None:
            expected = f"link to {managed.link}"
        elif managed.content is None:
            expected = "absent"
        else:
            lines = managed.content.count("\n")
            expected = f"{lines} line{'s' if lines != 1 else ''}, mode {managed.mode:04o}"
        found.append(Check(managed.path, "file", managed.path, expected, file=managed))
    return tuple(found)


def checks(rendered: Rendered, root: Path = Path("/")) -> tuple[Check, ...]:
    """Every check of a rendered plan: live settings first, then the managed files."""
    return (*live_checks(rendered, root), *file_checks(rendered))


def suite_source(all_checks: tuple[Check, ...], *, title: str = "a plan") -> str:
    """The testinfra module (Python source) that runs `all_checks`."""
    live = "".join(
        f"    pytest.param({c.id!r}, {c.title!r}, {_reads_literal(c.reads)}, id={c.id!r}),\n"
        for c in all_checks
        if c.kind == "live"
    )
    files = "".join(
        f"    pytest.param({c.id!r}, {f.content!r}, {f.mode:#o}, {f.link!r}, id={c.id!r}),\n"
        for c in all_checks
        if c.kind == "file" and (f := c.file) is not None
    )
    # The title (a plan's path) goes into a docstring: escaped so that it stays one line of
    # that docstring, whatever quotes, backslashes or control characters it holds.
    safe_title = repr(title)[1:-1].replace('"', '\\"')
    source = (
        _TEMPLATE.replace("@TITLE@", safe_title).replace("@LIVE@", live).replace("@FILES@", files)
    )
    return source + (_LIVE_TEST if live else "") + (_FILE_TEST if files else "")


def _reads_literal(reads: tuple[Read, ...]) -> str:
    return "[" + ", ".join(f"({r.path!r}, {r.kind!r}, {r.expected!r})" for r in reads) + "]"


# The generated module. Kept free of iotuner imports so it runs wherever pytest-testinfra does;
# its normalisers mirror tuner/tunables (block.Scheduler.read, sysctl.TcpMem.read, irq).
_TEMPLATE = '''\
"""iotuner verification of @TITLE@ (generated by `iotuner verify`; edits are overwritten).

Run: pytest --hosts=local:// test_iotuner_verify.py   (or --hosts=ansible://HOST with
--ansible-inventory=FILE). Each failure names the setting or file and what it holds instead.
"""

import pytest

LIVE = [
@LIVE@]

FILES = [
@FILES@]


def _cpulist(text):
    cpus = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    runs = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _normalise(kind, text):
    text = text.strip()
    if kind == "int":
        return int(text)
    if kind == "triple":
        return tuple(int(word) for word in text.split())
    if kind == "scheduler":
        if "[" in text:
            return text.split("[", 1)[1].split("]", 1)[0]
        return text
    if kind == "cpulist":
        return _cpulist(text)
    return text


def _shown(value):
    if isinstance(value, tuple):
        return " ".join(map(str, value))
    return repr(value) if isinstance(value, str) else str(value)


def _first_difference(got, want):
    have, need = got.splitlines(keepends=True), want.splitlines(keepends=True)
    for number, (a, b) in enumerate(zip(have, need), 1):
        if a != b:
            return f"line {number} is {a!r}, expected {b!r}"
    if len(have) < len(need):
        return f"line {len(have) + 1} is missing, expected {need[len(have)]!r}"
    return f"line {len(need) + 1} is {have[len(need)]!r}, expected the end of the file"
'''

# Each test is written only when it has parameters: an empty parameter list would show up as a
# skipped test of its own.
_LIVE_TEST = """

@pytest.mark.parametrize("check,title,reads", LIVE)
def test_live(host, record_property, check, title, reads):
    record_property("check", check)
    record_property("host", host.backend.get_pytest_id())
    wrong = []
    for path, kind, expected in reads:
        found = host.file(path)
        if not found.exists:
            wrong.append(f"{path} is missing")
            continue
        try:
            text = found.content_string
        except RuntimeError:  # testinfra's word for a failed cat
            wrong.append(f"{path} cannot be read")
            continue
        try:
            got = _normalise(kind, text)
        except ValueError:
            wrong.append(f"{path} holds {text.strip()[:40]!r}")
            continue
        if got != expected:
            wrong.append(f"{path} reads {_shown(got)}, expected {_shown(expected)}")
    if wrong:
        pytest.fail(f"{title}: " + "; ".join(wrong), pytrace=False)
"""

_FILE_TEST = """

@pytest.mark.parametrize("check,content,mode,link", FILES)
def test_file(host, record_property, check, content, mode, link):
    record_property("check", check)
    record_property("host", host.backend.get_pytest_id())
    path = check
    found = host.file(path)
    if link is not None:
        if not found.is_symlink:
            state = "a file" if found.exists else "missing"
            pytest.fail(f"{path}: {state}, expected a link to {link}", pytrace=False)
        target = host.check_output("readlink -- %s", path)
        if target != link:
            pytest.fail(f"{path}: links to {target}, expected {link}", pytrace=False)
        return
    if content is None:
        if found.exists or found.is_symlink:
            pytest.fail(f"{path}: exists, but this plan needs it absent", pytrace=False)
        return
    if found.is_symlink:
        pytest.fail(f"{path}: a link to {found.linked_to}, expected a file", pytrace=False)
    if not found.is_file:
        pytest.fail(f"{path}: missing", pytrace=False)
    got = found.content
    if got != content.encode():
        why = _first_difference(got.decode("utf-8", "replace"), content)
        pytest.fail(f"{path}: differs from the plan: {why}", pytrace=False)
    if found.mode != mode:
        pytest.fail(f"{path}: mode {found.mode:04o}, expected {mode:04o}", pytrace=False)
"""
