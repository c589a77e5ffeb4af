"""iotuner: bring a Linux host's real I/O throughput close to what its hardware can deliver."""


def __getattr__(name: str) -> str:
    """`tuner.__version__`, read from the installed metadata when first asked for.

    Every `iotuner` call and every process importing any part of tuner imported
    importlib.metadata (and the email package under it) for a version only `--version`, the man
    page, the report and the daemon's metrics show.
    """
    if name != "__version__":
        raise AttributeError(f"module 'tuner' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("iotuner")
    except PackageNotFoundError:  # running from a checkout that was never installed
        found = "0.0.0+checkout"
    globals()["__version__"] = found
    return found
