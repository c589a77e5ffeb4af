"""Tunables: one registry of every setting iotuner can recommend, read, write and persist."""
