"""Online tuning: candidate settings tried on the live workload in short alternating slices."""
