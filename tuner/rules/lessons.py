"""The stable lesson ids every rule names (docs/design.md), so findings can be grouped, checked."""

LESSONS: dict[str, str] = {
    "request-size": "small requests kill throughput; 64 KB and up for streams",
    "queue-depth": "keep enough requests in flight (3-deep good, 8-deep better; more for stripes)",
    "write-cache": "volatile write cache enabled: fast but unsafe without power-loss protection",
    "bus-saturation": "more disks on a controller, channel or bus than it can carry",
    "bridge-saturation": "too many controllers behind one bridge / root port / switch uplink",
    "slot-placement": "a controller or NIC running below its link capability",
    "nic-storage-shared-path": "NIC and storage controller share a bus, bridge or root port",
    "numa-locality": "I/O device and the CPUs or IRQs serving it on different NUMA nodes",
    "irq-affinity": "a device's interrupts all land on one CPU, or off its local node",
    "readahead": "readahead too small for streaming (or too large for random access)",
    "io-scheduler": "scheduler unsuited to the device class",
    "logical-drive-count": "one large logical drive where several would queue more requests",
    "raid5-write": "parity RAID under a write-heavy workload",
    "stripe-alignment": "partition or file-system geometry not aligned to the stripe",
    "fs-choice": "file system or mount options poorly suited",
    "buffered-cpu-cost": "buffered I/O of large requests burning CPU; use direct I/O",
    "preallocate": "files extended while writing (synchronous allocation); pre-allocate",
    "zoned-bandwidth": "outer vs inner zones of rotating disks differ by about a third",
    "mixed-devices": "devices of different speed in one stripe",
    "tcp-buffers": "socket buffers below the bandwidth-delay product",
    "tcp-congestion": "congestion control unsuited to long fat pipes",
    "jumbo-frames": "MTU 1500 on a fast path where 9000 would cut CPU cost",
    "nic-ring-size": "NIC receive ring too small for a fast link: frames dropped in the host",
    "dirty-writeback": "dirty page thresholds that stall or starve streaming writes",
    "cpu-frequency": "power-saving CPU governor on an I/O server",
}

SEVERITIES = ("critical", "warning", "info")
