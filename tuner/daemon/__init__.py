"""`iotuner daemon`: hold the applied plan, follow hotplug and workload change (docs/daemon.md)."""
