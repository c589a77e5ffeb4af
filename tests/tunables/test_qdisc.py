"""net.core.default_qdisc on fixture trees (a kernel with fq built in, as a module, without it)
and on this host, whose kernel has no fq: the refusal names what is missing, nothing written."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TunableError
from tuner.tunables.domain import SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.kconfig import kernel_config
from tuner.tunables.naming import target_problem
from tuner.tunables.qdisc import availability
from tuner.tunables.sysroot import SysRoot, live_sysroot
from tuner.tunables.table import IMPLEMENTATIONS

KEY = "net.core.default_qdisc"
RELEASE = "6.1.0-28-amd64"
CONFIG = (
    "# Linux/x86 6.1 Kernel Configuration\nCONFIG_NET_SCH_HTB=y\n# CONFIG_NET_SCH_SFQ is not set\n"
)


def qdisc_file(host: SysTree) -> str:
    return (host.root / "proc/sys/net/core/default_qdisc").read_text().strip()


@pytest.fixture
def kernel(host: SysTree) -> SysTree:
    """The small host with a release, so /boot/config-RELEASE and /lib/modules/RELEASE apply."""
    return host.file("proc/sys/kernel/osrelease", RELEASE)


def test_reads_the_qdisc_and_has_no_dimension(tunables: Tunables, host: SysTree) -> None:
    assert tunables.read(KEY, "host") == "pfifo_fast"
    impl = IMPLEMENTATIONS[KEY]
    assert impl.dimension(SysRoot(host.root), "host", SpaceContext()) is None
    assert tunables.path(KEY, "host") == "/proc/sys/net/core/default_qdisc"


def test_fq_built_in_is_set(kernel: SysTree) -> None:
    kernel.file(f"boot/config-{RELEASE}", CONFIG + "CONFIG_NET_SCH_FQ=y\n")
    Tunables(kernel.root).write(KEY, "host", "fq")
    assert qdisc_file(kernel) == "fq"


def test_fq_as_an_installed_module_is_set_from_proc_config_gz(kernel: SysTree) -> None:
    (kernel.root / "proc/config.gz").write_bytes(
        gzip.compress(f"{CONFIG}CONFIG_NET_SCH_FQ=m\n".encode())
    )
    kernel.file(f"lib/modules/{RELEASE}/kernel/net/sched/sch_fq.ko.zst", "")
    config = kernel_config(SysRoot(kernel.root))
    assert config is not None and config.source == "/proc/config.gz"
    Tunables(kernel.root).write(KEY, "host", "fq")
    assert qdisc_file(kernel) == "fq"


@pytest.mark.parametrize(
    ("config", "modules", "why"),
    [
        (CONFIG, None, f"qdisc 'fq' is not in this kernel (CONFIG_NET_SCH_FQ is not set in "
         f"/boot/config-{RELEASE})"),
        (CONFIG + "CONFIG_NET_SCH_FQ=m\n", "net/sched/sch_htb.ko", f"qdisc 'fq' is a module "
         f"(CONFIG_NET_SCH_FQ=m in /boot/config-{RELEASE}) that is not installed (sch_fq is not "
         f"under /lib/modules/{RELEASE})"),
        (None, "net/sched/sch_htb.ko", f"qdisc 'fq' is not in this kernel (no sch_fq built in "
         f"or under /lib/modules/{RELEASE})"),
    ],
)  # fmt: skip
def test_fq_missing_is_refused_naming_what_is_missing(
    kernel: SysTree, config: str | None, modules: str | None, why: str
) -> None:
    if config is not None:
        kernel.file(f"boot/config-{RELEASE}", config)
    if modules is not None:
        kernel.file(f"lib/modules/{RELEASE}/kernel/{modules}", "")
    with pytest.raises(InvalidValue) as err:
        Tunables(kernel.root).write(KEY, "host", "fq")
    assert str(err.value) == f"{KEY} on host: {why}"
    assert err.value.exit_code == 2
    assert qdisc_file(kernel) == "pfifo_fast"


def test_a_loaded_module_counts_without_a_configuration(kernel: SysTree) -> None:
    kernel.dir(f"lib/modules/{RELEASE}/kernel/net/sched").dir("sys/module/sch_fq")
    assert availability(SysRoot(kernel.root), "fq") is None


def test_with_nothing_to_tell_the_kernel_decides(host: SysTree) -> None:
    """No configuration and no modules (a container's view): the write is the kernel's call."""
    assert availability(SysRoot(host.root), "fq") is None
    assert availability(SysRoot(host.root), "pfifo_fast") is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("noqueue", "'noqueue' is not a default qdisc iotuner sets (one of pfifo_fast, fq, "
         "fq_codel, sfq, cake, fq_pie)"),
        ("fq\ncubic", "expected a name (letters, digits, . _ : , + -), got 'fq\\ncubic'"),
        (3, "expected a name (letters, digits, . _ : , + -), got 3"),
    ],
)  # fmt: skip
def test_other_values_are_refused(tunables: Tunables, value: object, why: str) -> None:
    with pytest.raises(InvalidValue) as err:
        tunables.validate(KEY, "host", value)
    assert str(err.value) == f"{KEY} on host: {why}"


def test_any_qdisc_the_kernel_held_is_restored(tunables: Tunables, host: SysTree) -> None:
    """A host may run a default iotuner would not choose (pie): rollback puts it back."""
    host.file("proc/sys/net/core/default_qdisc", "pie")
    with TunableEngine(host.root, None) as engine:
        engine.apply({(KEY, "host"): "pfifo_fast"})
        assert qdisc_file(host) == "pfifo_fast"
    assert qdisc_file(host) == "pie"


def test_the_kernel_keeps_it_for_the_whole_host() -> None:
    assert target_problem(KEY, "netns:blue") == (
        f"{KEY} is not kept per network namespace (a namespace shares the host's value and "
        "cannot write it): write target: host"
    )


@pytest.mark.lab
def test_this_kernel_without_fq_refuses_it_and_the_host_keeps_its_qdisc() -> None:
    sys = live_sysroot()
    if availability(sys, "fq") is None:
        pytest.skip("this kernel has fq (or cannot tell): the refusal needs one without it")
    before = Path("/proc/sys/net/core/default_qdisc").read_text()
    with pytest.raises(InvalidValue) as err:
        TunableEngine(sys, None).apply({(KEY, "host"): "fq"})
    message = str(err.value)
    assert message.startswith(f"{KEY} on host: qdisc 'fq' is not in this kernel (CONFIG_NET_SCH_FQ")
    assert "\n" not in message
    # The kernel agrees: writing it anyway is refused (ENOENT) and said the same way.
    with pytest.raises(TunableError, match="qdisc 'fq' is not in this kernel \\(it refused it"):
        IMPLEMENTATIONS[KEY].write(sys, "host", "fq")
    assert Path("/proc/sys/net/core/default_qdisc").read_text() == before
