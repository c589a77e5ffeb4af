"""The data set a workload really has, and how much of it production's page cache can hold.

A trial must cache what production caches, no more: a random reader of a 1 GiB file on a host
whose applications leave 256 MiB to the page cache reads three quarters of its pages from the
disk, and a trial that let the file sit whole in a development machine's memory would measure
memory (the x432 "gain" of a readahead that pulled the whole file in; docs/trials.md).

`CacheModel` holds production's two figures: the working set (from the user's fio job, or
`tune --data-set`) and the memory left for the page cache (`--cache-memory`, else the host's
MemAvailable). The trial then runs on its own data set (the user's file, or a scratch file)
in a memory cgroup holding the same share of it (tuner/trials/memcap.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.trials.fio import count, fio_size, largest_size
from tuner.units import human_bytes

# Below this a cgroup cannot hold fio itself and its pages; production shares that small are
# rounded up to it (documented in docs/trials.md).
MIN_CACHE_BYTES = 16 << 20


@dataclass(frozen=True)
class CacheModel:
    """Production's working set and the page cache it may use, in bytes.

    `data_set_bytes` None: unknown (a workload profile on a scratch file): the trial reads its
    data once, nothing may come from memory, as before this model existed.
    """

    data_set_bytes: int | None
    cache_bytes: int

    @property
    def share(self) -> float:
        """The fraction of the data set production's page cache can hold (0 when unknown)."""
        if not self.data_set_bytes:
            return 0.0
        return min(1.0, self.cache_bytes / self.data_set_bytes)

    @property
    def fits(self) -> bool:
        """True when the whole data set fits in production's cache: after warm-up every read
        comes from memory, and only the warm-up can be tuned."""
        return self.data_set_bytes is not None and self.share >= 1.0

    def limit_for(self, trial_bytes: int) -> int | None:
        """The page cache a trial on `trial_bytes` of data may use, or None for no limit
        (unknown data set: reads are once; a fitting one: all of it may be cached)."""
        if self.data_set_bytes is None or self.fits:
            return None
        return max(int(self.share * trial_bytes), MIN_CACHE_BYTES)

    def describe(self) -> str:
        """One line for people: what production caches and what the trials therefore do."""
        if self.data_set_bytes is None:
            return "data set unknown: each trial reads its data once, none of it from memory"
        data, cache = human_bytes(self.data_set_bytes), human_bytes(self.cache_bytes)
        if self.fits:
            return (
                f"data set {data} fits in the {cache} page cache: reads come from memory "
                "once it is warm, so the trials measure the warm-up from a cold cache"
            )
        return (
            f"data set {data}, page cache {cache}: production caches {self.share:.0%} of it, "
            "and each trial's page cache is limited to the same share of its data"
        )


def job_data_set(options: Mapping[str, Any]) -> int | None:
    """The data set a fio job that names no existing file makes, in bytes, or None.

    `nrfiles` x `filesize` per job (each job its own files), else `size` (jobs that share one
    `filename` share its data; without a file name each job makes its own), at least
    `filesize` (a range's top), to which fio extends a single file. A job reading
    the user's own file reads `trial.user_region_bytes` of it.
    """
    jobs = count(options, "numjobs")
    try:
        # fio makes each file `filesize` long (the top of a range) whatever `size` says.
        per_file = largest_size(options["filesize"]) if options.get("filesize") else None
        if per_file is not None and count(options, "nrfiles") > 1:
            return count(options, "nrfiles") * per_file * jobs
        by_size = None
        if options.get("size") is not None and not str(options["size"]).strip().endswith("%"):
            size = fio_size(options["size"])
            by_size = size if options.get("filename") else size * jobs
    except ValueError:
        return None
    if per_file is not None:
        # One file (a scratch file, shared by the jobs) that fio extends to `filesize`: the
        # free-space check of the scratch file must count it.
        return max(by_size or 0, per_file)
    return by_size
