"""The generated testinfra suite, run for real with pytest: it fails until the host holds the
plan, passes once it does, and each failure names the setting or file at fault."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import NVME
from tuner.apply.render import ManagedFile, Rendered, render
from tuner.plan import Plan, PlanEntry, write_plan
from tuner.tunables.access import Tunables
from tuner.tunables.base import KernelRead
from tuner.tunables.engine import TunableEngine
from tuner.verify.run import Outcome, run_suite, verify
from tuner.verify.suite import Check, checks, file_checks, live_checks, suite_source


def plan_of(*entries: PlanEntry) -> Plan:
    return Plan(1, "2026-11-22T00:00:00+00:00", "vm", "advise", "stream-read", entries)


def failed(outcomes: tuple[Outcome, ...]) -> dict[str, str]:
    return {o.check: o.message for o in outcomes if not o.passed}


def put_files_in_place(rendered: Rendered) -> None:
    """What the role does to the managed files, done directly (the role is tested apart)."""
    for managed in rendered.files:
        path = Path(managed.path)
        if path.is_symlink() or path.exists():
            path.unlink()
        if managed.link is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(managed.link)
        elif managed.content is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(managed.content)
            path.chmod(managed.mode)


# -- generation (no root) ------------------------------------------------------------------


def test_irq_and_governor_checks_read_each_file(host: SysTree) -> None:
    plan = plan_of(
        PlanEntry("irq.affinity", NVME, "local-node"),
        PlanEntry("cpu.governor", "host", "performance"),
    )
    found = live_checks(render(plan, root=host.root), root=host.root)
    irq, governor = found
    assert irq.id == f"irq.affinity@{NVME}" and irq.title == f"irq.affinity on {NVME}"
    # local-node: the three vectors round robin over the device's CPUs 2-3.
    assert irq.reads == (
        KernelRead("/proc/irq/40/smp_affinity_list", "cpulist", "2"),
        KernelRead("/proc/irq/41/smp_affinity_list", "cpulist", "3"),
        KernelRead("/proc/irq/42/smp_affinity_list", "cpulist", "2"),
    )
    assert [r.path for r in governor.reads] == [
        f"/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_governor" for n in range(4)
    ]
    assert {r.expected for r in governor.reads} == {"performance"}


def test_every_managed_file_is_a_check(tmp_path: Path, host: SysTree) -> None:
    rendered = render(plan_of(PlanEntry("irq.affinity", NVME, "one-cpu")),
                      root=host.root, conf_root=tmp_path)  # fmt: skip
    found = {c.id: c for c in file_checks(rendered)}
    assert set(found) == {f.path for f in rendered.files}
    unit = found[str(tmp_path / "etc/systemd/system/iotuner-boot.service")]
    assert unit.expected.endswith("mode 0644")
    assert found[str(tmp_path / "etc/sysctl.d/60-iotuner.conf")].expected == "absent"
    wants = "etc/systemd/system/multi-user.target.wants/iotuner-boot.service"
    assert (
        found[str(tmp_path / wants)].expected == "link to /etc/systemd/system/iotuner-boot.service"
    )
    compile(suite_source(checks(rendered, root=host.root)), "suite", "exec")


# -- the generated module's own logic, on plain files (no root) --------------------------------


def test_normalisers_read_like_the_tunables(tmp_path: Path) -> None:
    files = {"scheduler": "none [mq-deadline] kyber\n", "rmem": "4096\t131072\t6291456\n",
             "cpus": "0,1,3\n", "ra": "4092\n", "cc": "cubic\n"}  # fmt: skip
    for name, text in files.items():
        (tmp_path / name).write_text(text)

    def live(name: str, kind: str, expected: object) -> Check:
        read = KernelRead(str(tmp_path / name), kind, expected)  # type: ignore[arg-type]
        return Check(f"x.{name}@t", "live", f"x.{name} on t", str(expected), (read,))

    good = (live("scheduler", "scheduler", "mq-deadline"),
            live("rmem", "triple", (4096, 131072, 6291456)), live("cpus", "cpulist", "0-1,3"),
            live("ra", "int", 4092), live("cc", "name", "cubic"))  # fmt: skip
    outcomes = run_suite(suite_source(good))
    assert [o.check for o in outcomes] == [c.id for c in good]
    assert all(o.passed for o in outcomes), failed(outcomes)

    bad = (live("scheduler", "scheduler", "bfq"), live("ra", "int", 128),
           live("missing", "int", 1))  # fmt: skip
    assert failed(run_suite(suite_source(bad))) == {
        "x.scheduler@t": f"x.scheduler on t: {tmp_path}/scheduler reads 'mq-deadline', "
        "expected 'bfq'",
        "x.ra@t": f"x.ra on t: {tmp_path}/ra reads 4092, expected 128",
        "x.missing@t": f"x.missing on t: {tmp_path}/missing is missing",
    }


def test_file_checks_fail_then_pass(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    wanted = ManagedFile(str(conf / "a.rules"), "line 1\nline 2\n", 0o644)
    absent = ManagedFile(str(conf / "b.conf"), None)
    link = ManagedFile(str(conf / "wants/x.service"), None, link="/etc/x.service")
    rendered = Rendered(plan_of(), (wanted, absent, link), (), {})
    source = suite_source(file_checks(rendered))
    assert failed(run_suite(source)) == {
        wanted.path: f"{wanted.path}: missing",
        link.path: f"{link.path}: missing, expected a link to /etc/x.service",
    }
    put_files_in_place(rendered)
    assert failed(run_suite(source)) == {}

    Path(wanted.path).write_text("line 1\nline 3\n")
    Path(absent.path).write_text("left over\n")
    Path(link.path).unlink()
    Path(link.path).symlink_to("/etc/y.service")
    assert failed(run_suite(source)) == {
        wanted.path: f"{wanted.path}: differs from the plan: line 2 is 'line 3\\n', "
        "expected 'line 2\\n'",
        absent.path: f"{absent.path}: exists, but this plan needs it absent",
        link.path: f"{link.path}: links to /etc/y.service, expected /etc/x.service",
    }
    put_files_in_place(rendered)
    Path(wanted.path).chmod(0o600)
    assert failed(run_suite(source)) == {wanted.path: f"{wanted.path}: mode 0600, expected 0644"}


def test_keep_leaves_a_suite_plain_pytest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = Rendered(plan_of(), (ManagedFile(str(tmp_path / "none"), None),), (), {})
    monkeypatch.chdir(tmp_path)
    keep = Path("kept")  # relative, as a user types it
    assert run_suite(suite_source(file_checks(rendered)), keep=keep)[0].passed
    assert {p.name for p in keep.iterdir()} >= {"test_iotuner_verify.py", "pytest.ini", "junit.xml"}
    again = subprocess.run([sys.executable, "-m", "pytest", "--hosts=local://", "-q"], cwd=keep,
                           capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 0 and "1 passed" in again.stdout, again.stdout + again.stderr


def test_host_sysctls_as_they_are_pass(tmp_path: Path) -> None:
    """Reading needs no root: a plan holding today's values verifies on the live host."""
    keys = ("vm.dirty_expire_centisecs", "net.ipv4.tcp_rmem")
    plan = plan_of(*(PlanEntry(key, "host", Tunables().read(key, "host")) for key in keys))
    rendered = render(plan, conf_root=tmp_path)
    result = verify(rendered)
    sysctl_conf = str(tmp_path / "etc/sysctl.d/60-iotuner.conf")
    assert failed(result.outcomes) == {sysctl_conf: f"{sysctl_conf}: missing"}
    assert result.failures() == [f"{sysctl_conf}: missing"] and not result.passed
    put_files_in_place(rendered)
    assert verify(rendered).passed


# -- a real loop device and a configuration root (root) --------------------------------------


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device(64) as name:
        yield name


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device and configuration root; no figure
def test_suite_fails_before_and_passes_after(loop: str, tmp_path: Path) -> None:
    plan = plan_of(
        PlanEntry("block.read_ahead_kb", loop, 4093),  # the kernel keeps 4092
        PlanEntry("block.scheduler", loop, "mq-deadline"),
        PlanEntry("block.nr_requests", loop, 64),
        PlanEntry("block.max_sectors_kb", loop, 64),
    )
    rendered = render(plan, conf_root=tmp_path)
    rules = str(tmp_path / "etc/udev/rules.d/60-iotuner.rules")
    # A reused loop device keeps an earlier user's settings: expect what it holds now.
    expected = {rules: f"{rules}: missing"}
    for s in rendered.live:
        now = Tunables().read(s.key, loop)
        if now != s.expected:
            shown = repr(now) if isinstance(now, str) else str(now)
            want = repr(s.expected) if isinstance(s.expected, str) else str(s.expected)
            expected[f"{s.key}@{loop}"] = (
                f"{s.key} on {loop}: {s.path} reads {shown}, expected {want}"
            )
    assert len(expected) == 5, "a fresh loop device holds none of these values"
    assert failed(verify(rendered).outcomes) == expected

    with TunableEngine(Path("/")) as engine:
        engine.apply({(s.key, s.target): s.value for s in rendered.live})
        put_files_in_place(rendered)
        assert verify(rendered).passed

        # One value drifts: exactly that check fails, and its line says which and how.
        Tunables().write("block.read_ahead_kb", loop, 256)
        drifted = failed(verify(rendered).outcomes)
        assert drifted == {
            f"block.read_ahead_kb@{loop}": f"block.read_ahead_kb on {loop}: "
            f"/sys/block/{loop}/queue/read_ahead_kb reads 256, expected 4092"
        }


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device and configuration root; no figure
def test_verify_command(loop: str, tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    plan = plan_of(PlanEntry("block.read_ahead_kb", loop, 2048))
    path = tmp_path / "plan.yaml"
    write_plan(plan, path)
    state = tmp_path / "state"

    result = iotuner("verify", str(path), "--conf-root", str(conf), "--json", state=state)
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    assert not doc["passed"] and doc["failed"] == 2
    by_id = {c["id"]: c for c in doc["checks"]}
    assert by_id[f"block.read_ahead_kb@{loop}"]["messages"] == [
        f"block.read_ahead_kb on {loop}: /sys/block/{loop}/queue/read_ahead_kb reads "
        f"{Tunables().read('block.read_ahead_kb', loop)}, expected 2048"
    ]

    rendered = render(plan, conf_root=conf)
    with TunableEngine(Path("/")) as engine:
        engine.apply({(s.key, s.target): s.value for s in rendered.live})
        put_files_in_place(rendered)
        keep = tmp_path / "kept"
        ok = iotuner("verify", str(path), "--conf-root", str(conf), "--keep", str(keep),
                     state=state)  # fmt: skip
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "block.read_ahead_kb on" in ok.stdout and "5 of 5 checks passed" in ok.stdout
        assert (keep / "test_iotuner_verify.py").exists()


def test_verify_command_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    write_plan(plan_of(PlanEntry("block.read_ahead_kb", "sdz9", 4096)), path)
    result = iotuner("verify", str(path), "--conf-root", str(tmp_path), state=tmp_path / "s")
    assert result.returncode == 2
    assert "entries[0] (block.read_ahead_kb on sdz9)" in result.stderr
    missing = iotuner("verify", str(tmp_path / "nope.yaml"), state=tmp_path / "s")
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr


def test_remote_hosts_through_ansible(tmp_path: Path) -> None:
    """Each host of an inventory checked through Ansible (local connections stand in for SSH)."""
    inventory = tmp_path / "hosts.ini"
    python = sys.executable
    inventory.write_text(
        "".join(f"{h} ansible_connection=local ansible_python_interpreter={python}\n"
                for h in ("web1", "web2"))
    )  # fmt: skip
    there = ManagedFile(str(tmp_path / "there"), "x\n", 0o644)
    (tmp_path / "there").write_text("x\n")
    (tmp_path / "there").chmod(0o644)
    gone = ManagedFile(str(tmp_path / "gone"), "y\n", 0o644)
    source = suite_source(file_checks(Rendered(plan_of(), (there, gone), (), {})))
    outcomes = run_suite(source, hosts="ansible://web1,ansible://web2", inventory=inventory)
    assert sorted((o.host, o.check, o.passed) for o in outcomes) == [
        ("ansible://web1", gone.path, False), ("ansible://web1", there.path, True),
        ("ansible://web2", gone.path, False), ("ansible://web2", there.path, True),
    ]  # fmt: skip


def test_a_title_cannot_break_out_of_the_docstring() -> None:
    # The title is the plan's path, and a path may hold anything but "/" and NUL.
    for title in ('p"""\nimport os\nos.system("id")\n"""', "p\\N{x}.yaml", "p\\x.yaml", 'a\\"""'):
        source = suite_source((), title=title)
        tree = ast.parse(source)
        assert [type(node).__name__ for node in tree.body[:1]] == ["Expr"]  # the docstring
        assert not any(isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "system"
                       for n in ast.walk(tree))  # fmt: skip
