"""Tree ids, one scheme for every probe, so nodes found by different probes link up."""

MACHINE_ID = "machine"


def pci_bus_id(domain: str, bus: str) -> str:
    """The id of the PCI host bridge for `domain:bus` (as in `/sys/devices/pciDDDD:BB`)."""
    return f"pcibus:{domain}:{bus}"


def pci_id(address: str) -> str:
    """The id of a PCI function, by its full address (`0000:00:1f.2`, `10000:00:04.0`)."""
    return f"pci:{address}"


def port_id(name: str) -> str:
    """The id of a storage-path hop (`host4`, `port-4:0`, `target4:0:0`, `nvme0`)."""
    return f"port:{name}"


def block_id(name: str) -> str:
    """The id of a block device by kernel name."""
    return f"block:{name}"


def net_id(name: str) -> str:
    """The id of a network interface."""
    return f"net:{name}"
