"""The /proc/interrupts parser across kernel versions and architectures."""

from __future__ import annotations

from probes.interrupts import msi_chip_address, parse_header, parse_interrupts


def test_header_names_sparse_cpus_in_order() -> None:
    assert parse_header("           CPU0       CPU2       ") == (0, 2)
    assert parse_header("  0:  1 2 IO-APIC") is None
    assert parse_header("   ") is None


def test_this_vms_lines() -> None:
    text = (
        "           CPU0       CPU1       \n"
        " 36:          0       6334 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
        " 26:          0         14  IO-APIC   4-edge      ttyS0\n"
    )
    (virtio, serial), problems = parse_interrupts(text)
    assert problems == []
    assert (virtio.irq, virtio.counts, virtio.chip, virtio.actions) == (
        36,
        (0, 6334),
        "PCI-MSIX-0000:00:02.0",
        "virtio1-req.0",
    )
    assert (serial.chip, serial.actions) == ("IO-APIC", "ttyS0")


def test_old_x86_and_arm64_formats() -> None:
    text = (
        "   CPU0 CPU1\n"
        " 56:  3  4  PCI-MSI-edge      eth0-rx-0\n"
        " 11:  12 13  GICv3  27 Level     arch_timer\n"
        " 45:  0  9  ITS-MSI 524288 Edge      nvme0q0\n"
        " 27:  1  1  GICv3  30 Level     kvm guest vtimer\n"
    )
    lines, problems = parse_interrupts(text)
    assert problems == []
    assert [(li.chip, li.actions) for li in lines] == [
        ("PCI-MSI-edge", "eth0-rx-0"),
        ("GICv3", "arch_timer"),
        ("ITS-MSI", "nvme0q0"),
        ("GICv3", "kvm guest vtimer"),
    ]


def test_line_without_chip_or_action_is_kept() -> None:
    (line,), problems = parse_interrupts("CPU0\n  7:  5\n")
    assert (line.irq, line.counts, line.chip, line.actions) == (7, (5,), None, "")
    assert problems == []


def test_short_and_garbage_lines_are_reported() -> None:
    lines, problems = parse_interrupts("CPU0 CPU1\n 9: 1\n 10: 1 x IO-APIC\n%%%\n")
    assert lines == []
    assert len(problems) == 3


def test_empty_file() -> None:
    assert parse_interrupts("") == ([], ["empty"])


def test_msi_chip_address() -> None:
    assert msi_chip_address("PCI-MSIX-0000:00:02.0") == "0000:00:02.0"
    assert msi_chip_address("IR-PCI-MSI-10000:00:04.0") == "10000:00:04.0"
    assert msi_chip_address("PCI-MSI-edge") is None
    assert msi_chip_address(None) is None


def test_a_header_naming_an_absurd_cpu_is_refused_not_allocated() -> None:
    lines, problems = parse_interrupts("CPU0 CPU99999999\n 9: 1 2 IO-APIC 9-fasteoi acpi\n")
    assert lines == []
    assert problems == ["CPU header names CPU 99999999, beyond 65535"]


def test_unicode_digits_are_not_interrupt_numbers_or_counts() -> None:
    text = "CPU0\n ²: 1 IO-APIC x\n 9: ٣ IO-APIC y\n 10: 4 IO-APIC z\n"
    lines, problems = parse_interrupts(text)
    assert [(line.irq, line.counts) for line in lines] == [(10, (4,))]
    assert len(problems) == 2
