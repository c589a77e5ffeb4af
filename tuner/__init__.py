"""iotuner: bring a Linux host's real I/O throughput close to what its hardware can deliver."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iotuner")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+checkout"
