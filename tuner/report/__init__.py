"""`iotuner report`: the host's topology, findings and measured results on one HTML page."""
