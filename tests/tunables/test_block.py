"""Block queue tunables on a fixture tree: normalised reads, writes, and every refusal."""

from __future__ import annotations

import pytest

from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import ABSENT, InvalidValue, TargetGone


def text(host: SysTree, rel: str) -> str:
    return (host.root / rel).read_text().strip()


def test_reads_are_normalised(tunables: Tunables) -> None:
    assert tunables.read("block.scheduler", "loop3") == "none"
    assert tunables.read("block.scheduler", "/dev/sda") == "mq-deadline"
    assert tunables.read("block.read_ahead_kb", "loop3") == 128
    assert tunables.read("block.write_cache", "loop3") == "write back"


@pytest.mark.parametrize(
    ("key", "value", "attr", "written"),
    [
        ("block.read_ahead_kb", 4096, "read_ahead_kb", "4096"),
        ("block.read_ahead_kb", "0", "read_ahead_kb", "0"),
        ("block.scheduler", "mq-deadline", "scheduler", "mq-deadline"),
        ("block.nr_requests", 128, "nr_requests", "128"),
        ("block.nr_requests", 4, "nr_requests", "4"),
        ("block.max_sectors_kb", 256, "max_sectors_kb", "256"),
        ("block.max_sectors_kb", 1280, "max_sectors_kb", "1280"),
        ("block.rq_affinity", 2, "rq_affinity", "2"),
        ("block.nomerges", 2, "nomerges", "2"),
        ("block.write_cache", "Write-Through", "write_cache", "write through"),
    ],
)
def test_happy_path(
    tunables: Tunables, host: SysTree, key: str, value: object, attr: str, written: str
) -> None:
    tunables.write(key, "/dev/loop3", value)
    assert text(host, f"sys/block/loop3/queue/{attr}") == written


@pytest.mark.parametrize(
    ("key", "target", "value", "why"),
    [
        ("block.scheduler", "loop3", "cfq",
         "'cfq' is not available (choose from none, mq-deadline, kyber, bfq)"),
        ("block.read_ahead_kb", "loop3", -1, "-1 is below 0, the least the kernel accepts"),
        ("block.read_ahead_kb", "loop3", "lots", "expected an integer, got 'lots'"),
        ("block.read_ahead_kb", "loop3", True, "expected an integer, got True"),
        ("block.nr_requests", "loop3", 3, "3 is below 4, the least the kernel accepts"),
        ("block.nr_requests", "loop3", 256,
         "256 exceeds 128, the most the kernel accepts with scheduler none"),
        ("block.nr_requests", "sda", 2049,
         "2049 exceeds 2048, the most the kernel accepts with scheduler mq-deadline"),
        ("block.max_sectors_kb", "loop3", 2048, "2048 exceeds max_hw_sectors_kb 1280"),
        ("block.max_sectors_kb", "loop3", 2, "2 is below 4 KB, the page size"),
        ("block.max_sectors_kb", "loop3", 0, "0 is below 4 KB, the page size"),
        ("block.rq_affinity", "loop3", 3, "3 exceeds 2, the most the kernel accepts"),
        ("block.nomerges", "loop3", -1, "-1 is below 0, the least the kernel accepts"),
        ("block.nomerges", "loop3", 5, "5 exceeds 2, the most the kernel accepts"),
        ("block.write_cache", "loop3", "write around",
         "'write around' is not 'write back' or 'write through'"),
    ],
)  # fmt: skip
def test_refusals_name_key_target_and_why(
    tunables: Tunables, host: SysTree, key: str, target: str, value: object, why: str
) -> None:
    before = sorted((p.name, p.read_text()) for p in (host.root / "sys/block").rglob("*")
                    if p.is_file())  # fmt: skip
    with pytest.raises(InvalidValue) as err:
        tunables.write(key, target, value)
    assert str(err.value) == f"{key} on {target}: {why}"
    assert err.value.exit_code == 2
    after = sorted((p.name, p.read_text()) for p in (host.root / "sys/block").rglob("*")
                   if p.is_file())  # fmt: skip
    assert after == before, "nothing is written when a value is refused"


def test_nr_requests_limit_follows_the_scheduler_being_set(tunables: Tunables) -> None:
    # 256 is too deep for loop3 without a scheduler, fine once mq-deadline comes with it.
    pending = {("block.scheduler", "loop3"): "mq-deadline"}
    assert tunables.validate("block.nr_requests", "loop3", 256, pending=pending) == 256
    # sda's shallowest hardware queue has 32 tags: that is the limit once it runs none.
    with pytest.raises(InvalidValue, match=r"33 exceeds 32, the most .* scheduler none"):
        tunables.validate(
            "block.nr_requests", "sda", 33, pending={("block.scheduler", "sda"): "none"}
        )


def test_a_missing_device_is_named(tunables: Tunables) -> None:
    with pytest.raises(TargetGone) as err:
        tunables.read("block.read_ahead_kb", "loop9")
    assert str(err.value) == "block.read_ahead_kb on loop9: no such block device (/sys/block/loop9)"
    with pytest.raises(InvalidValue, match="expected a block device's kernel name"):
        tunables.validate("block.scheduler", "../../etc", "none")


def test_scheduler_saves_nr_requests_with_it(tunables: Tunables, host: SysTree) -> None:
    saved = tunables.save("block.scheduler", "sda")
    assert saved.original == "mq-deadline"
    # The scheduler's parameters come and go with it: mq-deadline's are saved, bfq's are not
    # there (restoring them writes nothing), and writeback throttling's target is kept.
    assert saved.coupled == {
        "block.nr_requests": 64,
        "block.wbt_lat_usec": 2000,
        "block.bfq_slice_idle": ABSENT,
        "block.bfq_low_latency": ABSENT,
        "block.deadline_fifo_batch": 16,
        "block.deadline_read_expire": 500,
    }
    tunables.write("block.scheduler", "sda", "none")
    (host.root / "sys/block/sda/queue/nr_requests").write_text("32\n")  # as the kernel resets it
    tunables.restore("block.scheduler", "sda", saved)
    assert tunables.read("block.nr_requests", "sda") == 64


def test_leaving_none_gives_the_hardware_queue_its_tags_back(
    tunables: Tunables, host: SysTree
) -> None:
    # Under none, nr_requests is the hardware queue's own tag depth, and the kernel keeps a
    # shallow one through later scheduler changes without showing it: the switch away from
    # none writes the whole depth (mq/0/nr_tags, 128) first.
    tunables.write("block.nr_requests", "loop3", 8)
    tunables.write("block.scheduler", "loop3", "mq-deadline")
    assert text(host, "sys/block/loop3/queue/nr_requests") == "128"
    assert text(host, "sys/block/loop3/queue/scheduler") == "mq-deadline"
