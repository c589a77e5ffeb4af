"""Sysctls inside a network namespace: the `netns:NAME` target, its allow-list, the bounded
child that enters the namespace, and real namespaces changed and restored.

The live tests make their own namespace (tests/netns.py) and check what it holds with `ip netns
exec NAME sysctl`, and that the host's own value did not move.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.netns import host_sysctl, network_namespace, sysctl_in
from tests.owned import Owned, unique
from tests.sysfs_tree import SysTree
from tuner.errors import BadInput
from tuner.plan import Plan, PlanEntry, check_plan
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TargetGone, TunableError
from tuner.tunables.domain import SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.naming import target_problem
from tuner.tunables.netns import name_problem, namespace_of
from tuner.tunables.sysroot import CommandFailed, SysRoot
from tuner.tunables.table import IMPLEMENTATIONS

RMEM = "net.ipv4.tcp_rmem"
OLD = "4096 87380 174760"


@pytest.mark.parametrize("name", ["iotuner-wan-receiver", "a", "blue_1", "ns.2", "x" * 64, "0"])
def test_namespace_names_ip_netns_gives_are_targets(name: str) -> None:
    assert target_problem(RMEM, f"netns:{name}") is None
    assert namespace_of(f"netns:{name}") == name


@pytest.mark.parametrize(
    "name", ["", "..", ".hidden", "-n", "a/b", "a b", "a;b", "x" * 65, "ns\n", "ns:2", "é"]
)
def test_other_namespace_names_are_refused_before_any_lookup(name: str) -> None:
    why = target_problem(RMEM, f"netns:{name}")
    assert why is not None and why.startswith("a namespace name is letters, digits"), why
    assert name_problem(f"netns:{name}") == why


@pytest.mark.parametrize("key", ["net.core.rmem_max", "net.core.wmem_max", "vm.dirty_ratio"])
def test_keys_the_kernel_keeps_for_the_whole_host_refuse_a_namespace(key: str) -> None:
    assert target_problem(key, "netns:blue") == (
        f"{key} is not kept per network namespace (a namespace shares the host's value and "
        "cannot write it): write target: host"
    )


def test_a_per_namespace_key_says_both_targets_it_takes() -> None:
    assert target_problem(RMEM, "eth0") == (
        "write target: host, or netns:NAME for the network namespace NAME"
    )
    assert target_problem("net.ipv4.tcp_congestion_control", "host") is None


def test_a_plan_names_the_namespace_and_is_checked_by_the_same_rules() -> None:
    def plan(target: str) -> Plan:
        return Plan(1, "2026-11-26T07:00:00+00:00", "dtn01", "advise", None,
                    (PlanEntry(RMEM, target, [4096, 87380, 33554432]),))  # fmt: skip

    assert check_plan(plan("netns:iotuner-wan-receiver"), "plan.yaml")
    with pytest.raises(BadInput, match=r"entries\[0\]: target 'netns:a/b': a namespace name"):
        check_plan(plan("netns:a/b"), "plan.yaml")


def test_a_fixture_root_never_enters_a_namespace(host: SysTree) -> None:
    """Namespaces are entered on the live host only: a capture or fixture has none to enter."""
    tunables = Tunables(host.root)
    before = (host.root / "proc/sys/net/ipv4/tcp_rmem").read_text()
    with pytest.raises(TunableError, match="namespaces are entered on the live host only"):
        tunables.read(RMEM, "netns:blue")
    with pytest.raises(TunableError, match="namespaces are entered on the live host only"):
        tunables.write(RMEM, "netns:blue", OLD)
    assert (host.root / "proc/sys/net/ipv4/tcp_rmem").read_text() == before
    assert tunables.path(RMEM, "netns:blue") == (
        "nsenter --net=/run/netns/blue sysctl -n net.ipv4.tcp_rmem"
    )


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("net.core.rmem_max", "1"),  # read-only inside a namespace
        ("kernel.core_pattern", "x"),  # not a namespace's sysctl at all
        (RMEM, "1 2 3;reboot"),
        (RMEM, "1=2"),
        (RMEM, "-w"),
        ("net.ipv4.tcp_allowed_congestion_control", "reno"),  # read, never written
    ],
)
def test_the_child_runs_only_allow_listed_keys_and_values(
    host: SysTree, key: str, text: str
) -> None:
    with pytest.raises(CommandFailed, match="not an allowed namespace write"):
        SysRoot(host.root).netns_write("blue", key, text)


def test_the_child_reads_only_allow_listed_keys(host: SysTree) -> None:
    with pytest.raises(CommandFailed, match="not an allowed namespace read"):
        SysRoot(host.root).netns_read("blue", "kernel.core_pattern")
    with pytest.raises(CommandFailed, match="not a namespace name"):
        SysRoot(host.root).netns_read("../../etc", RMEM)


# -- real namespaces ---------------------------------------------------------------------------


@pytest.fixture
def namespace(owned: Owned) -> str:
    """A network namespace of the test's own, deleted by `owned`'s finalizer."""
    return owned.namespace()


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace (tests/owned.py); the host's values only read
def test_tcp_rmem_set_inside_a_namespace_and_restored_leaves_the_host_alone(
    namespace: str,
) -> None:
    host_before = host_sysctl(RMEM)
    ns_before = sysctl_in(namespace, RMEM)
    target = f"netns:{namespace}"
    with TunableEngine(Path("/"), None) as engine:
        (applied,) = engine.apply({(RMEM, target): OLD})
        assert (applied.original, applied.actual) == (
            tuple(map(int, ns_before.split())),
            (4096, 87380, 174760),
        )
        assert sysctl_in(namespace, RMEM) == OLD
        assert host_sysctl(RMEM) == host_before
    assert sysctl_in(namespace, RMEM) == ns_before
    assert host_sysctl(RMEM) == host_before


# Serial: it holds the host's allowed list still between reading it and the check, and a
# network lab on another worker lends its namespaces every available algorithm meanwhile.
@pytest.mark.lab
def test_congestion_control_inside_a_namespace_is_one_the_host_allows(namespace: str) -> None:
    """The kernel refuses a restricted algorithm inside a namespace (EPERM): validation says
    so first, naming the host's allowed list."""
    tunables = Tunables(Path("/"))
    target = f"netns:{namespace}"
    allowed = host_sysctl("net.ipv4.tcp_allowed_congestion_control").split()
    available = host_sysctl("net.ipv4.tcp_available_congestion_control").split()
    restricted = [name for name in available if name not in allowed]
    if not restricted:
        pytest.skip("every available algorithm is allowed on this host")
    with pytest.raises(InvalidValue, match=f"'{restricted[0]}' is not allowed inside a network"):
        tunables.validate("net.ipv4.tcp_congestion_control", target, restricted[0])
    assert tunables.validate("net.ipv4.tcp_congestion_control", target, allowed[0]) == allowed[0]


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace (tests/owned.py); the host's values only read
def test_a_namespace_that_is_gone_is_a_target_gone() -> None:
    with network_namespace() as name:
        pass
    with pytest.raises(TargetGone, match=f"no network namespace {name} \\(/run/netns/{name}\\)"):
        Tunables(Path("/")).read(RMEM, f"netns:{name}")


# Serial: it holds the host's allowed list still between reading it and the check, and a
# network lab on another worker lends its namespaces every available algorithm meanwhile.
@pytest.mark.lab
def test_a_transfer_tune_searches_inside_the_namespace_what_it_holds(namespace: str) -> None:
    """The dimensions read the namespace's own values: its max as the low end (its min and
    default kept) and, for congestion control, the algorithms the host allows there."""
    sys = SysRoot(Path("/"))
    target = f"netns:{namespace}"
    context = SpaceContext(tcp=True, tcp_window_high=64 << 20)
    low, default, high = map(int, sysctl_in(namespace, RMEM).split())
    rmem = IMPLEMENTATIONS[RMEM].dimension(sys, target, context)
    assert rmem is not None
    assert (rmem.target, rmem.low, rmem.high, rmem.kept) == (target, high, 64 << 20,
                                                             (low, default))  # fmt: skip
    cc = IMPLEMENTATIONS["net.ipv4.tcp_congestion_control"].dimension(sys, target, context)
    allowed = sysctl_in(namespace, "net.ipv4.tcp_allowed_congestion_control").split()
    current = sysctl_in(namespace, "net.ipv4.tcp_congestion_control")
    if len(set([current, *allowed])) < 2:
        assert cc is None
    else:
        assert cc is not None and cc.choices == tuple(dict.fromkeys([current, *allowed]))


# A process inside a namespace, naming the "host": what `ip netns exec NAME iotuner ...` does.
_INSIDE = """
import json
import os
from pathlib import Path
from tuner.tunables.base import InvalidValue
from tuner.tunables.access import Tunables
from tuner.tunables.domain import SpaceContext
from tuner.tunables.sysroot import SysRoot
from tuner.tunables.table import IMPLEMENTATIONS
sys_root = SysRoot(Path("/"))
context = SpaceContext(tcp=True, tcp_window_high=64 << 20)
cc = IMPLEMENTATIONS["net.ipv4.tcp_congestion_control"].dimension(sys_root, "host", context)
refused = {}
for key, value in (("net.core.rmem_max", 4194304), ("net.ipv4.tcp_congestion_control", "cubic")):
    try:
        Tunables(Path("/")).validate(key, "host", value)
    except InvalidValue as err:
        refused[key] = str(err)
print(json.dumps({"initial": sys_root.in_initial_netns(),
                  "choices": list(cc.choices) if cc else None, "refused": refused}))
"""


def test_the_host_namespace_is_told_from_a_fixture_and_the_live_host() -> None:
    assert SysRoot(Path("/")).in_initial_netns()
    assert SysRoot(Path("/tmp")).in_initial_netns()  # not live: a fixture describes a host


# Serial: it holds the host's allowed list still between reading it and the check, and a
# network lab on another worker lends its namespaces every available algorithm meanwhile.
@pytest.mark.lab
def test_a_process_inside_a_namespace_sets_only_what_the_namespace_may(namespace: str) -> None:
    """Run inside a namespace, the "host" target is the namespace's: its congestion controls
    are those the host allows there, and the host-wide socket maxima are refused in one line
    (the kernel would make them the whole host's, or refuse them)."""
    done = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", _INSIDE],
                          capture_output=True, text=True, timeout=60, check=True,
                          cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    found = json.loads(done.stdout)
    assert found["initial"] is False
    allowed = host_sysctl("net.ipv4.tcp_allowed_congestion_control").split()
    current = sysctl_in(namespace, "net.ipv4.tcp_congestion_control")
    choices = list(dict.fromkeys([current, *allowed]))
    assert found["choices"] == (choices if len(choices) > 1 else None)
    refused = found["refused"]
    assert "runs inside a network namespace: the value is the whole host's" in refused[
        "net.core.rmem_max"]  # fmt: skip
    if "cubic" not in allowed:
        why = refused["net.ipv4.tcp_congestion_control"]
        assert "'cubic' is not allowed inside a network namespace" in why


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace (tests/owned.py); the host's values only read
def test_each_namespace_has_its_own_id_and_a_planted_file_has_none() -> None:
    """What the journal keeps with a per-namespace original (docs/journal.md): a namespace made
    again under the same name is another one, and a file that is not a namespace is none."""
    sys_root = SysRoot(Path("/"))
    with network_namespace() as name:
        first = sys_root.netns_id(name)
    with network_namespace() as other:
        assert sys_root.netns_id(other) not in (None, first)
    assert first is not None and first != sys_root.netns_id(None)
    planted = Path("/run/netns", unique("iotuner-test-planted-"))
    planted.write_text("")
    try:
        assert sys_root.netns_id(planted.name) is None
    finally:
        planted.unlink()
    assert sys_root.netns_id("../../proc/self/ns/net") is None
