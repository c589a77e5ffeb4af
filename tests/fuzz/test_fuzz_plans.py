"""Fuzzing plans: generated plan files through reading, checking and rendering on a host.

A plan is refused in one line, or it renders to files whose every line is one iotuner means to
write: comments, one udev rule per device, `key = value` sysctls, one ExecStart whose
arguments are exactly the unit's settings. No generated field adds a line of its own.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.apply.hosts import identity_host
from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME
from tests.yaml_bombs import alias_bomb, deep_nesting
from tuner.apply import boot
from tuner.apply.render import BOOT_UNIT, SYSCTL_CONF, UDEV_RULES, Rendered, render
from tuner.errors import BadInput
from tuner.plan import parse_plan
from tuner.tunables.registry import TUNABLES

_UDEV_RULE = re.compile(
    r'ACTION=="add(\|change)?", SUBSYSTEM=="(block|net)", (ENV\{DEVTYPE\}=="disk", )?'
    r'(ENV\{ID_[A-Z]+\}|ATTRS?\{[a-z_/]+\})=="[A-Za-z0-9 ._:/+,=@~#-]+"'
    r'(, ATTR\{[a-z_/]+\}="[A-Za-z0-9 ._:-]+")+'
)
_SYSCTL = re.compile(r"[a-z0-9_.]+ = [A-Za-z0-9 _.-]+")

_HOSTILE = [
    "x\nACTION==\"add\", RUN+=\"/bin/sh\"", "a\rb", "\x1b[2J", "[red]x[/red]",
    "{{ lookup('pipe', 'id') }}", "%h$PATH", "sd\x00a", "../../etc", "a\\", 'a"b', "x" * 300,
    "host ", " sda", "", "héllo",
]  # fmt: skip
_TARGETS = ["loop3", "/dev/loop3", "sda", "sdb", "sdz", "eth0", "host", NVME, "storage01"]
_text = st.one_of(st.sampled_from(_HOSTILE), st.text(max_size=40))
_scalar = st.one_of(
    st.integers(-(2**70), 2**70), st.sampled_from([0, 4, 128, 4093, 1 << 30, 10**30, -128]),
    st.sampled_from(["none", "mq-deadline", "performance", "local-node", "write back", "reno",
                     "0:performance 1:powersave 2:performance 3:powersave", "40:2 41:3 42:2"]),
    _text, st.booleans(), st.none(), st.floats(allow_nan=True),
)  # fmt: skip
_value = st.one_of(
    _scalar, _scalar, st.lists(st.integers(-10, 2**40), max_size=4),
    st.dictionaries(_text, _scalar, max_size=2),
)  # fmt: skip


def _entry() -> st.SearchStrategy[dict[str, object]]:
    fields = {
        "key": st.one_of(st.sampled_from(sorted(TUNABLES)), _text),
        "target": st.one_of(st.sampled_from(_TARGETS), _text),
        "value": _value,
        "current": st.one_of(st.none(), _scalar),
        "reason": st.one_of(st.sampled_from(["tune", "readahead-small"]), _text),
    }
    return st.fixed_dictionaries(
        {k: fields[k] for k in ("key", "target", "value")},
        optional={"current": fields["current"], "reason": fields["reason"], "vaule": _scalar},
    )


_plan = st.fixed_dictionaries(
    {
        "plan_version": st.sampled_from([1, 1, 1, True, "1", 2, None]),
        "created": st.one_of(st.just("2026-11-22T07:10:00+00:00"), _text),
        "host": st.one_of(st.just("storage01"), _text),
        "source": st.one_of(st.sampled_from(["advise", "tune", "daemon"]), _text),
        "workload": st.one_of(
            st.sampled_from(["stream-read", "fio-job:scan.fio"]), st.none(), _text
        ),
        "entries": st.lists(_entry(), max_size=5),
    },
    optional={"search": st.lists(st.dictionaries(_text, _scalar, max_size=3), max_size=2),
              "measured": st.one_of(st.none(), st.dictionaries(_text, _value, max_size=3)),
              "hsot": _text},
)  # fmt: skip
# Plans apply could take on the fixture host, a field or two of them made hostile: most of
# these reach rendering, where the files' lines are checked.
_GOOD_ENTRIES = [
    ("block.read_ahead_kb", "loop3", 4096), ("block.read_ahead_kb", "sda", 8192),
    ("block.scheduler", "loop3", "mq-deadline"), ("block.nr_requests", "/dev/loop3", 64),
    ("vm.dirty_background_ratio", "host", 5), ("vm.dirty_bytes", "host", 1 << 30),
    ("net.ipv4.tcp_rmem", "host", [4096, 87380, 33554432]), ("irq.affinity", NVME, "local-node"),
    ("cpu.governor", "host", "0:performance 1:powersave 2:performance 3:powersave"),
    ("nic.mtu", "eth0", 9000),
]  # fmt: skip


def _mostly(good: object, bad: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """`good` about nine times in ten, else something from `bad` (one_of would make it half)."""
    return st.integers(0, 99).flatmap(lambda i: bad if i % 10 == 3 else st.just(good))


_good_entry = st.sampled_from(_GOOD_ENTRIES).flatmap(
    lambda kt: st.fixed_dictionaries(
        {"key": st.just(kt[0]), "target": _mostly(kt[1], _text), "value": _mostly(kt[2], _value)},
        optional={"reason": _mostly("tune", _text), "current": _mostly(128, _scalar)},
    )
)
_plausible = st.fixed_dictionaries(
    {
        "plan_version": st.just(1),
        "created": st.just("2026-11-22T07:10:00+00:00"),
        "host": _mostly("storage01", _text),
        "source": st.sampled_from(["advise", "tune", "daemon"]),
        "workload": _mostly("stream-read", st.one_of(st.none(), _text)),
        "entries": st.lists(_good_entry, max_size=6, unique_by=lambda e: (e["key"], e["target"])),
    }
)
_mutation = st.tuples(
    st.integers(0, 10_000), st.sampled_from(["\n", "{{", "]", "\x00", ": ", "- "])
)
_document = st.builds(
    lambda plan, cut: _mutated(yaml.safe_dump(plan, allow_unicode=True), cut),
    st.one_of(_plausible, _plan),
    st.one_of(st.none(), st.none(), _mutation),
)


def _mutated(text: str, cut: tuple[int, str] | None) -> str:
    if cut is None:
        return text
    at = cut[0] % (len(text) + 1)
    return text[:at] + cut[1] + text[at:]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return identity_host(SysTree(tmp_path_factory.mktemp("fuzz-host") / "root")).root


def handles(text: str, host: Path) -> None:
    """Refused in one line, or rendered to files holding only the lines iotuner writes."""
    with within():
        try:
            plan = parse_plan(text, "fuzz.yaml")
            rendered = render(plan, plan_path="fuzz.yaml", root=host, conf_root=Path("/conf"))
        except BadInput as err:
            refused_well(err)
            note("refused")
            return
    note(f"rendered ({len(rendered.live)} values)")
    check_files(rendered)


def check_files(rendered: Rendered) -> None:
    """Every line of every managed file is a comment or one line iotuner means to write."""
    contents = {Path(f.path).relative_to("/conf").as_posix(): f.content for f in rendered.files}
    units = [s for s in rendered.live if TUNABLES[s.key].persist == "unit"]
    for rel, content in contents.items():
        for line in (content or "").splitlines():
            if not line or line.startswith("# "):
                assert line.isprintable(), (rel, line)
                continue
            if rel == UDEV_RULES:
                assert _UDEV_RULE.fullmatch(line), line
            elif rel == SYSCTL_CONF:
                assert _SYSCTL.fullmatch(line), line
            elif rel == BOOT_UNIT and line.startswith("ExecStart="):
                args = shlex.split(line.removeprefix("ExecStart="))
                assert [boot.parse(a)[:2] for a in args[3:]] == [(s.key, s.target) for s in units]
            elif rel == BOOT_UNIT:
                assert re.fullmatch(r"\[[A-Za-z]+\]|[A-Za-z]+=[A-Za-z0-9 .,()\-/]+", line), line


@FUZZ
@given(_document)
def test_generated_plans(host: Path, text: str) -> None:
    handles(text, host)


# -- YAML aliases (issue 27): bombs of any shape, anywhere in a plan ---------------------------

_FIELDS = ["measured", "search", "entries", "workload", "hsot"]


@st.composite
def _alias_document(draw: st.DrawFn) -> str:
    """A plausible plan with an alias bomb, deep nesting or a cyclic alias under some field."""
    plan = yaml.safe_dump(draw(_plausible))
    field = draw(st.sampled_from(_FIELDS))
    kind = draw(st.sampled_from(["bomb", "bomb", "flow", "nesting", "cycle", "merge"]))
    width, levels = draw(st.integers(2, 60)), draw(st.integers(2, 9))
    if kind == "bomb":
        body = "\n" + alias_bomb(width, levels, indent="  ")
    elif kind == "flow":  # a bomb inside one flow sequence
        items = [f"&a0 [{', '.join(['x'] * width)}]"]
        items += [f"&a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
        body = " [" + ", ".join(items) + "]"
    elif kind == "nesting":
        depth = draw(st.integers(10, 20_000))
        body = " " + draw(st.sampled_from([deep_nesting(depth), "{a: " * depth + "}" * depth]))
    elif kind == "cycle":
        body = draw(st.sampled_from([" &c [*c]", " &c {a: *c}", " &c [[[*c]]]"]))
    else:
        body = "\n  m0: &m0 {a: 1, b: 2}\n" + "".join(
            f"  m{i}: &m{i} {{<<: *m{i - 1}, " + ", ".join(f"k{j}: *m{i - 1}" for j in range(width))
            + "}\n"
            for i in range(1, levels)
        )  # fmt: skip
    note(f"aliases: {kind}")
    lines = [line for line in plan.splitlines() if not line.startswith(f"{field}:")]
    return "\n".join(lines) + f"\n{field}:{body}\n"


@FUZZ
@given(_alias_document())
def test_generated_plans_of_yaml_aliases(host: Path, text: str) -> None:
    handles(text, host)


@pytest.mark.parametrize("path", corpus("plans"), ids=lambda p: p.name)
def test_plans_that_once_failed(host: Path, path: Path) -> None:
    handles(path.read_text(), host)
