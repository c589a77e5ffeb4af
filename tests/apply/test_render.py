"""A plan rendered for a host: the files it should hold, the live values, and bad plans refused."""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

import pytest

from tests.apply.hosts import BACKING, WWN, identity_host
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME
from tuner.apply.render import BOOT_UNIT, BOOT_WANTS, SYSCTL_CONF, UDEV_RULES, render
from tuner.errors import BadInput
from tuner.plan import Plan, PlanEntry


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    return identity_host(tree)


def plan(*entries: tuple[str, str, object]) -> Plan:
    return Plan(1, "2026-11-22T07:10:00+00:00", "storage01", "advise", "stream-read",
                tuple(PlanEntry(k, t, v) for k, t, v in entries))  # fmt: skip


FULL = plan(
    ("block.read_ahead_kb", "loop3", 4093),
    ("block.nr_requests", "/dev/loop3", 512),
    ("block.scheduler", "loop3", "mq-deadline"),
    ("block.read_ahead_kb", "sda", 8192),
    ("vm.dirty_background_ratio", "host", 5),
    ("net.ipv4.tcp_rmem", "host", [4096, 87380, 33554432]),
    ("irq.affinity", NVME, "local-node"),
)


def files(rendered: object, conf: Path) -> dict[str, str | None]:
    return {str(Path(f.path).relative_to(conf)): f.content for f in rendered.files}  # type: ignore[attr-defined]


def test_block_settings_become_one_udev_rule_per_disk_matched_by_identity(
    host: SysTree, tmp_path: Path
) -> None:
    rendered = render(FULL, root=host.root, conf_root=tmp_path)
    rules = files(rendered, tmp_path)[UDEV_RULES]
    assert rules is not None
    lines = [line for line in rules.splitlines() if not line.startswith("#")]
    assert lines == [
        'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
        f'ATTR{{loop/backing_file}}=="{BACKING}", ATTR{{queue/scheduler}}="mq-deadline", '
        'ATTR{queue/nr_requests}="512", ATTR{queue/read_ahead_kb}="4093"',
        'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
        f'ENV{{ID_WWN}}=="{WWN}", ATTR{{queue/read_ahead_kb}}="8192"',
    ], "the scheduler before the depth it allows, readahead last; never a kernel name"
    assert "sda" not in lines[1]


def test_host_settings_go_to_sysctl_d_and_irqs_to_a_boot_unit(
    host: SysTree, tmp_path: Path
) -> None:
    rendered = render(FULL, root=host.root, conf_root=tmp_path)
    found = files(rendered, tmp_path)
    sysctl = found[SYSCTL_CONF] or ""
    assert sysctl.splitlines()[-2:] == [
        "net.ipv4.tcp_rmem = 4096 87380 33554432", "vm.dirty_background_ratio = 5"]  # fmt: skip
    unit = found[BOOT_UNIT] or ""
    assert f"-m tuner.apply.boot irq.affinity@{NVME}=local-node\n" in unit
    assert "Type=oneshot" in unit and "WantedBy=multi-user.target" in unit
    wants = next(f for f in rendered.files if f.path.endswith(BOOT_WANTS))
    assert wants.link == f"/{BOOT_UNIT}" and wants.wanted


def test_live_values_in_apply_order_with_what_reading_back_gives(host: SysTree) -> None:
    rendered = render(FULL, root=host.root)
    order = [(s.key, s.target) for s in rendered.live]
    assert order[0] == ("block.scheduler", "loop3")
    by_key = {(s.key, s.target): s for s in rendered.live}
    readahead = by_key[("block.read_ahead_kb", "loop3")]
    assert (readahead.value, readahead.expected) == (4093, 4092), "whole 4 KB pages"
    assert readahead.path == "/sys/block/loop3/queue/read_ahead_kb"
    assert by_key[("irq.affinity", NVME)].expected == "40:2 41:3 42:2"


def test_files_a_plan_does_not_need_are_to_be_absent(host: SysTree, tmp_path: Path) -> None:
    rendered = render(plan(("block.read_ahead_kb", "loop3", 4096)), root=host.root,
                      conf_root=tmp_path)  # fmt: skip
    found = files(rendered, tmp_path)
    assert found[UDEV_RULES] and found[SYSCTL_CONF] is None and found[BOOT_UNIT] is None
    assert not any(f.wanted for f in rendered.files if not f.path.endswith(UDEV_RULES))


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (("block.readahead", "loop3", 1), "entries[0]: unknown tunable 'block.readahead'"),
        (("block.read_ahead_kb", "sdz", 4096), "entries[0] (block.read_ahead_kb on sdz): no such "
         "block device (/sys/block/sdz)"),
        (("block.nr_requests", "loop3", 256), "entries[0] (block.nr_requests on loop3): 256 "
         "exceeds 128, the most the kernel accepts with scheduler none"),
        (("block.read_ahead_kb", "sdb", 4096), "entries[0] (block.read_ahead_kb on sdb): sdb: no "
         "WWN, serial, by-path or loop backing file"),
    ],
)  # fmt: skip
def test_a_bad_entry_is_named_and_nothing_is_touched(
    host: SysTree, tmp_path: Path, entry: tuple[str, str, object], message: str
) -> None:
    before = tree_digest(host.root)
    with pytest.raises(BadInput) as err:
        render(plan(entry), plan_path="p.yaml", root=host.root, conf_root=tmp_path / "conf")
    assert str(err.value).startswith(f"p.yaml: {message}")
    assert err.value.exit_code == 2
    assert tree_digest(host.root) == before and not (tmp_path / "conf").exists()


def test_both_halves_of_a_dirty_pair_are_refused(host: SysTree) -> None:
    both = plan(("vm.dirty_ratio", "host", 30), ("vm.dirty_bytes", "host", 1 << 30))
    with pytest.raises(BadInput, match=r"entries\[0\] \(vm.dirty_ratio on host\): set either"):
        render(both, root=host.root)


def test_a_setting_inside_a_network_namespace_is_refused_as_runtime_only(
    host: SysTree, tmp_path: Path
) -> None:
    """apply persists (sysctl.d, read by the host at boot); a namespace does not outlive a
    reboot, so the plan entry is refused in one line saying where the setting belongs."""
    before = tree_digest(host.root)
    entry = ("net.ipv4.tcp_rmem", "netns:iotuner-wan-receiver", [4096, 87380, 33554432])
    with pytest.raises(BadInput) as err:
        render(plan(entry), plan_path="p.yaml", root=host.root, conf_root=tmp_path / "conf")
    assert str(err.value) == (
        "p.yaml: entries[0] (net.ipv4.tcp_rmem on netns:iotuner-wan-receiver): runtime only: "
        "network namespace iotuner-wan-receiver does not outlive a reboot, so apply cannot "
        "persist net.ipv4.tcp_rmem in it; set it where the namespace is created "
        "(ip netns exec iotuner-wan-receiver sysctl -w net.ipv4.tcp_rmem=...)"
    )
    assert err.value.exit_code == 2
    assert tree_digest(host.root) == before and not (tmp_path / "conf").exists()


# -- rendering by construction (issue 17) ------------------------------------------------------


def test_a_plan_built_in_code_with_a_hostile_header_is_refused(host: SysTree) -> None:
    header = 'x\nACTION=="add", RUN+="/bin/sh -c id"'
    hostile = Plan(1, "2026-11-22T07:10:00+00:00", header, "advise", None,
                   (PlanEntry("vm.dirty_background_ratio", "host", 5),))  # fmt: skip
    with pytest.raises(BadInput, match="is not a host name"):
        render(hostile, root=host.root)


def test_sysctl_targets_are_the_host_so_the_dirty_pair_check_holds(host: SysTree) -> None:
    both = plan(("vm.dirty_ratio", "host", 30), ("vm.dirty_bytes", "elsewhere", 1 << 30))
    with pytest.raises(BadInput, match=r"target 'elsewhere'.*applies to the whole host"):
        render(both, root=host.root)


def test_a_governor_target_cannot_add_unit_lines(host: SysTree) -> None:
    hostile = plan(("cpu.governor", "host\nExecStartPre=/bin/sh -c id", "performance"))
    with pytest.raises(BadInput, match="applies to the whole host"):
        render(hostile, root=host.root)


def test_a_per_cpu_governor_layout_is_one_argument_of_the_boot_unit(
    host: SysTree, tmp_path: Path
) -> None:
    from tuner.apply import boot

    cpus = sorted(p.name for p in (host.root / "sys/devices/system/cpu").glob("cpu[0-9]*"))
    layout = " ".join(f"{name[3:]}:{'performance' if i == 0 else 'powersave'}"
                      for i, name in enumerate(cpus))  # fmt: skip
    rendered = render(plan(("cpu.governor", "host", layout)), root=host.root, conf_root=tmp_path)
    unit = files(rendered, tmp_path)[BOOT_UNIT] or ""
    (line,) = [ln for ln in unit.splitlines() if ln.startswith("ExecStart=")]
    args = shlex.split(line.removeprefix("ExecStart="))
    assert args[1:3] == ["-m", "tuner.apply.boot"]
    assert [boot.parse(a) for a in args[3:]] == [("cpu.governor", "host", layout)]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (("block.read_ahead_kb", "loop3", 10**30), "exceeds 4294967295"),
        (("vm.dirty_bytes", "host", 10**40), "exceeds 18446744073709551615"),
        (("block.nr_requests", "sdb", 2**40), "exceeds"),
        (("block.read_ahead_kb", "loop3", -128), "is below 0"),
        (("nic.mtu", "eth0", 2**40), "exceeds 2147483647"),
    ],
)
def test_values_the_kernel_refuses_are_refused_here(
    host: SysTree, entry: tuple[str, str, object], why: str
) -> None:
    with pytest.raises(BadInput, match=why):
        render(plan(entry), root=host.root)


@pytest.mark.parametrize(
    "backing", ["/dev/shm/disk\\", "/dev/shm/a\nb", '/dev/shm/a"b', "/dev/shm/*", "/dev/shm/a|b"]
)
def test_an_identity_udev_cannot_match_exactly_is_refused(host: SysTree, backing: str) -> None:
    (host.root / "sys/block/loop3/loop/backing_file").write_text(backing + "\n")
    with pytest.raises(BadInput, match="a udev rule cannot match it exactly"):
        render(plan(("block.read_ahead_kb", "loop3", 4096)), root=host.root)


def test_a_disk_with_nothing_stable_is_matched_by_name_only_when_its_entry_says_so(
    host: SysTree, tmp_path: Path
) -> None:
    """sdb has no WWN, serial, by-path or backing file: its entry is refused, naming the
    choice, unless it says `match: name`; then the rule matches the kernel name."""
    with pytest.raises(BadInput, match=r"sdb: no WWN.*match: name.*--match-by name"):
        render(plan(("block.read_ahead_kb", "sdb", 4096)), root=host.root, conf_root=tmp_path)
    by_name = Plan(1, "2026-11-22T07:10:00+00:00", "storage01", "advise", "stream-read",
                   (PlanEntry("block.read_ahead_kb", "sdb", 4096, match="name"),))  # fmt: skip
    rules = files(render(by_name, root=host.root, conf_root=tmp_path), tmp_path)[UDEV_RULES]
    assert rules is not None
    assert 'KERNEL=="sdb", ATTR{queue/read_ahead_kb}="4096"' in rules, rules
