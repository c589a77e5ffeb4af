"""Read-only discovery of a host's I/O topology; `probe_host` runs every probe in order."""
