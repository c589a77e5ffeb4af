"""`iotuner capture`: what a host's block devices are asked, as a small fingerprint.

events.py parses the kernel's block tracepoints as tracefs prints them; stats.py folds them
into bounded streaming statistics; fingerprint.py writes, reads back (by allow-list) and
compares fingerprints; tracefs.py owns the tracefs instance a capture reads; reproduce.py
turns a fingerprint into a fio job; compare.py puts two fingerprints side by side.
docs/capture.md describes the whole.
"""
