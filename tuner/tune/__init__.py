"""`iotuner tune`: measure a baseline, search the settings with real trials, confirm the winner."""
