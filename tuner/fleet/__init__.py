"""Fleet rollout: hardware fingerprints to group hosts, and plans retargeted host to host."""
