"""Plans: merged from findings, written as YAML, read back equal, bad plans named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.common import refused_well, within
from tests.yaml_bombs import deep_nesting, sized_bomb
from tuner.errors import BadInput
from tuner.plan import read_plan, write_plan
from tuner.rules.model import Finding, Setting, Source
from tuner.rules.to_plan import plan_from_findings

SOURCE = (Source("003_7920ff5510b23a75.txt", "Section 4", "blockdev --setra 16384"),)


def finding(rule: str, severity: str, *settings: Setting) -> Finding:
    return Finding(rule, rule, "readahead", severity, "sda", "e", "r", settings, SOURCE, ("all",))


def test_bounds_merge_to_the_tightest_and_ranges_go_to_search(tmp_path: Path) -> None:
    findings = (
        finding("a", "critical", Setting("block.read_ahead_kb", "sda", 4096, "at_least", 128)),
        finding("b", "warning", Setting("block.read_ahead_kb", "sda", 16384, "at_least", 128)),
        finding("c", "warning", Setting("block.nr_requests", "sda", None, "range", 4, (64, 1024))),
        finding("d", "info", Setting("block.scheduler", "sda", "none", "value", "none")),
    )
    plan = plan_from_findings(findings, "host1", "stream-read")
    assert [(e.key, e.value, e.reason) for e in plan.entries] == [
        ("block.read_ahead_kb", 16384, "b")
    ]
    assert [(s.key, s.low, s.high) for s in plan.search] == [("block.nr_requests", 64, 1024)]
    path = tmp_path / "plan.yaml"
    write_plan(plan, path)
    assert read_plan(path) == plan
    assert path.read_text().startswith("# iotuner plan")


def test_unknown_tunable_is_named(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    plan = plan_from_findings(
        (finding("a", "warning", Setting("block.read_ahead_kb", "sda", 4096, "at_least", 1)),),
        "h",
        None,
    )
    write_plan(plan, path)
    path.write_text(path.read_text().replace("block.read_ahead_kb", "block.readahead"))
    with pytest.raises(BadInput, match=r"entries\[0\]: unknown tunable 'block.readahead'"):
        read_plan(path)


@pytest.mark.parametrize("text", ["not: a plan", "plan_version: 9", "[unclosed"])
def test_not_a_plan(tmp_path: Path, text: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    with pytest.raises(BadInput, match="plan"):
        read_plan(path)


def test_malformed_yaml_names_the_file_and_line_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("plan_version: 1\nentries:\n  - key: a\n    value: [1, 2\nhost: x\n")
    with pytest.raises(BadInput) as err:
        read_plan(path)
    message = str(err.value)
    assert message.startswith(f"{path}:5: not valid YAML (expected ',' or ']'")
    assert "<unicode string>" not in message and "\n" not in message


# -- hostile plans (issue 17): every field checked, nothing unknown ignored ------------------

GOOD = """\
plan_version: 1
created: '2026-11-22T07:10:00+00:00'
host: storage01
source: advise
workload: stream-read
entries:
- key: block.read_ahead_kb
  target: sda
  value: 4096
  current: 128
  reason: readahead-small-for-streaming
- key: vm.dirty_background_bytes
  target: host
  value: 268435456
"""


def bad_plan(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    with pytest.raises(BadInput) as caught:
        read_plan(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


def test_a_good_plan_reads(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(GOOD)
    assert [e.target for e in read_plan(path).entries] == ["sda", "host"]


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("host: storage01", "host: \"a\\nACTION==\\\"add\\\", RUN+=\\\"/bin/sh\\\"\"",
         "host: 'a\\nACTION==\"add\", RUN+=\"/bin/sh\"' is not a host name"),
        ("source: advise", "source: \"x\\nkernel.core_pattern = |/tmp/x\"", "source: "),
        ("workload: stream-read", "workload: \"w\\n[Service]\"", "workload: "),
        ("created: '2026-11-22T07:10:00+00:00'", "created: \"now\\nExecStartPre=/bin/sh\"",
         "created: "),
        ("plan_version: 1", "plan_version: true", "not an iotuner plan"),
        ("host: storage01", "host: storage01\nhsot: typo", "unknown field 'hsot'"),
        ("  value: 4096\n", "  value: 4096\n  vaule: 1\n", "entries[0]: unknown field 'vaule'"),
        ("  target: sda", "  target: \"sda\\nRUN+=x\"", "entries[0]: target 'sda\\nRUN+=x'"),
        ("  target: sda", "  target: '[red]sda'", "entries[0]: target '[red]sda'"),
        ("  target: host", "  target: storage01", "entries[1]: target 'storage01': "
         "vm.dirty_background_bytes applies to the whole host: write target: host"),
        ("  reason: readahead-small-for-streaming", "  reason: \"x\\x1b[2J\"",
         "entries[0]: reason: "),
        ("  value: 4096", "  value: {a: 1}", "entries[0]: value: expected an integer, a name"),
        ("  value: 4096", "  value: true", "entries[0]: value: expected an integer, a name"),
    ],
)  # fmt: skip
def test_every_field_is_checked(tmp_path: Path, old: str, new: str, why: str) -> None:
    assert old in GOOD
    assert why in bad_plan(tmp_path, GOOD.replace(old, new, 1))


def test_the_same_setting_twice_is_refused_however_the_target_is_spelled(tmp_path: Path) -> None:
    text = GOOD + "- key: block.read_ahead_kb\n  target: /dev/sda\n  value: 8192\n"
    assert bad_plan(tmp_path, text) == (
        "entries[2]: block.read_ahead_kb on sda is already set by entries[0]"
    )


def test_a_huge_plan_file_is_refused(tmp_path: Path) -> None:
    assert "larger than" in bad_plan(tmp_path, GOOD + "#" * (4 << 20))


def test_writing_a_plan_follows_no_planted_link(tmp_path: Path) -> None:
    # The old temporary was .NAME.tmp beside the plan: in a shared directory a link planted
    # there made root write through it.
    victim = tmp_path / "victim"
    victim.write_text("root's own\n")
    (tmp_path / ".plan.yaml.tmp").symlink_to(victim)
    plan = plan_from_findings((), "h", None)
    write_plan(plan, tmp_path / "plan.yaml")
    assert victim.read_text() == "root's own\n"
    assert read_plan(tmp_path / "plan.yaml") == plan
    with pytest.raises(BadInput, match="is a directory"):
        write_plan(plan, tmp_path)


def test_a_nul_in_a_target_is_bad_input(tmp_path: Path) -> None:
    assert "entries[0]: target 'sd\\x00a'" in bad_plan(
        tmp_path, GOOD.replace("target: sda", 'target: "sd\\0a"')
    )


# -- YAML budget (issue 27): aliases expanded and nesting count against it ---------------------

PLAN_HEAD = (
    "plan_version: 1\ncreated: '2026-11-22T07:10:00+00:00'\nhost: storage01\nsource: tune\n"
    "workload: null\nentries: []\n"
)


@pytest.mark.parametrize("size", [2_000, 38_000])
def test_a_plan_of_yaml_aliases_is_refused_in_well_under_a_second(
    tmp_path: Path, size: int
) -> None:
    # 2 KB took 23 s to check, 38 KB never finished: the walk saw every expanded alias.
    path = tmp_path / "plan.yaml"
    head = PLAN_HEAD + "measured:\n"
    path.write_text(head + sized_bomb(size - len(head), indent="  "))
    assert len(path.read_bytes()) <= size
    with within(1.0), pytest.raises(BadInput) as err:
        read_plan(path)
    assert "plan.yaml" in refused_well(err.value) and "aliases" in str(err.value)


def test_merge_keys_of_aliased_mappings_count_too(tmp_path: Path) -> None:
    # `<<: *m` copies a mapping's keys at load time: a bomb of merges costs while loading.
    lines = ["  m0: &m0 {" + ", ".join(f"k{i}: 1" for i in range(30)) + "}"]
    for level in range(1, 7):
        merged = ", ".join(f"k{i}: *m{level - 1}" for i in range(30))
        lines.append(f"  m{level}: &m{level} {{<<: *m{level - 1}, {merged}}}")
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN_HEAD + "measured:\n" + "\n".join(lines) + "\n")
    with within(1.0), pytest.raises(BadInput) as err:
        read_plan(path)
    refused_well(err.value)


@pytest.mark.parametrize("depth", [100, 10_000])
def test_deep_nesting_is_refused_before_it_is_walked(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN_HEAD + "measured: " + deep_nesting(depth) + "\n")
    with within(1.0), pytest.raises(BadInput) as err:
        read_plan(path)
    assert "nested" in refused_well(err.value)


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN_HEAD + "measured: &a {x: *a}\n")
    with within(1.0), pytest.raises(BadInput) as err:
        read_plan(path)
    refused_well(err.value)


def test_a_few_honest_aliases_still_read(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN_HEAD + "measured:\n  a: &r {mbps: 10.5}\n  b: *r\n")
    assert read_plan(path).measured == {"a": {"mbps": 10.5}, "b": {"mbps": 10.5}}


@pytest.mark.parametrize(
    ("measured", "kind"),
    [("[a, b]", "list"), ("'/dev/sda'", "str"), ("7", "int"), ("true", "bool")],
)
def test_measured_is_a_mapping_or_nothing(tmp_path: Path, measured: str, kind: str) -> None:
    # `measured: [a list]` passed the check and crashed `apply --measure` (issue 27).
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN_HEAD + f"measured: {measured}\n")
    with pytest.raises(BadInput) as err:
        read_plan(path)
    assert f"measured: expected a mapping of figures, got {kind}" in refused_well(err.value)


def test_an_entry_matches_by_name_only_when_it_says_name(tmp_path: Path) -> None:
    """`match: name` round-trips; any other word is refused naming the entry; a plan without
    it is written as before (no `match: null` in every entry)."""
    from tuner.errors import BadInput
    from tuner.plan import Plan, PlanEntry, plan_text, read_plan, write_plan

    entries = (PlanEntry("block.read_ahead_kb", "sdb", 4096, match="name"),
               PlanEntry("block.read_ahead_kb", "sda", 4096))  # fmt: skip
    path = tmp_path / "p.yaml"
    write_plan(Plan(1, "2026-11-22T07:10:00+00:00", "h", "advise", "stream-read", entries), path)
    assert read_plan(path).entries == entries
    assert path.read_text().count("match") == 1
    bad = path.read_text().replace("match: name", "match: wwn")
    path.write_text(bad)
    with pytest.raises(BadInput, match=r"entries\[0\]: match: 'wwn' is not one of name"):
        read_plan(path)
    assert "match" not in plan_text(Plan(1, "2026-11-22T07:10:00+00:00", "h", "advise", None, ()))
