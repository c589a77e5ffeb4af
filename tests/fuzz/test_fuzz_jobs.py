"""Fuzzing --fio-job: generated job files through the allow-list and fio's own reading.

An accepted job holds only allowed options with values their checks pass, fio reads it as the
checker does, and nothing runs: a marker command in any generated exec option never happens.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tuner.errors import BadInput
from tuner.rules.installed import load_rule_base
from tuner.trials.jobcheck import ALLOWED, REPLACED, check_job, load_job
from tuner.trials.jobkind import judge

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")

_OPTIONS = {o.name: o for o in (*ALLOWED, *REPLACED)}
_PROFILES = {w.name for w in load_rule_base().workloads}
_BY_SPELLING = {s: o for o in (*ALLOWED, *REPLACED) for s in (o.name, *o.aliases)}
_SPELLINGS = sorted(s for o in (*ALLOWED, *REPLACED) for s in (o.name, *o.aliases))
_HOSTILE_NAMES = [
    "include", "exec_prerun", "exec_postrun", "read_iolog", "write_iolog", "ioengine",
    "program", "opendir", "write_bw_log", "ioscheduler", "verify", "cpus_allowed", "kb_base",
    "allrandrepeat", "replay_redirect", "filename", "directory", "RW", "rw ", "${X}", "",
]  # fmt: skip
_GOOD_VALUES = [
    "read", "write", "randread", "randrw:8", "4k", "64k,4k", "1M", "4k-64k", "4k/50:64k/50",
    "1", "0", "16", "psync", "libaio", "io_uring", "random", "zipf:1.2", "sequential", "none",
    "inline", "linear", "100ms", "tausworthe",
]  # fmt: skip
_HOSTILE_VALUES = [
    "external:/tmp/x.so", "exec", "${HOME}", "$mb_memory", "/etc/shadow", "touch /tmp/PWNED",
    "read\x00write", "4k ; comment", "-1", "99999999999999999999", "\uff11", "²", "r\u00e9ad",
    "a" * 3000, "write\rread", "'quoted'", '"x"', "4k\\", "[global]",
]  # fmt: skip
_value = st.one_of(st.sampled_from(_GOOD_VALUES), st.sampled_from(_HOSTILE_VALUES), st.text())
_name = st.one_of(
    st.sampled_from(_SPELLINGS), st.sampled_from(_HOSTILE_NAMES), st.text(max_size=20)
)
_option = st.builds(
    lambda name, sep, value: name if value is None else f"{name}{sep}{value}",
    _name,
    st.sampled_from(["=", " = ", " =", "= "]),
    st.one_of(st.none(), _value),
)
_section = st.one_of(
    st.sampled_from(["[global]", "[job]", "[scan]", "[globalx]", "[]", "[a b]", "[j"]),
    st.text(max_size=12).map(lambda t: f"[{t}]"),
)
_line = st.one_of(
    _option, _option, _option, _section, st.sampled_from(["", "; comment", "# c", "   "]),
    st.text(max_size=60), st.sampled_from(["include /etc/passwd", "include job.fio"]),
)  # fmt: skip
_noise = st.builds(
    lambda head, lines, newline: newline.join([head, *lines]) + newline,
    st.sampled_from(["[global]", "[job]", "[j]", ""]),
    st.lists(_line, max_size=14),
    st.sampled_from(["\n", "\r\n"]),
)
# Jobs a user could have written: allowed options with values of the right shape, a few
# hostile lines among them, so that many reach fio's own reading.
_FITTING = {
    spelling: [v for v in (*_GOOD_VALUES, None) if _BY_SPELLING[spelling].check(v) is None] or ["1"]
    for spelling in _SPELLINGS
}


def _fitting_line(spelling: str) -> st.SearchStrategy[str]:
    return st.sampled_from(_FITTING[spelling]).map(
        lambda value: spelling if value is None else f"{spelling}={value}"
    )


_plausible_line = st.one_of(
    st.sampled_from(_SPELLINGS).flatmap(_fitting_line),
    st.sampled_from(_SPELLINGS).flatmap(_fitting_line),
    st.sampled_from(_SPELLINGS).flatmap(_fitting_line),
    _option,
)
_plausible = st.builds(
    lambda globals_, job: "\n".join(["[global]", *globals_, "[job]", *job]) + "\n",
    st.lists(_plausible_line, max_size=5, unique_by=lambda line: line.split("=")[0]),
    st.lists(_plausible_line, max_size=6, unique_by=lambda line: line.split("=")[0]),
)
_job = st.one_of(_noise, _plausible)


def handles(text: str, folder: Path) -> None:
    """The job is refused in one line, or accepted as only allowed options fio agrees on."""
    with within():
        try:
            job = check_job(text, "fuzz.fio")
        except BadInput as err:
            refused_well(err)
            note("refused by the allow-list")
            return
        for name, value in job.options.items():
            option = _OPTIONS[name]
            assert option in ALLOWED and option.check(value) is None, (name, value)
        path = folder / "job.fio"
        path.write_text(text)
        try:
            seen = load_job(path)
        except BadInput as err:  # fio refuses a value the patterns let through (bs=0)
            refused_well(err)
            note("refused by fio")
            return
        assert set(seen.options) <= {o.name for o in ALLOWED}
        # Every accepted job is judged, into built-in profiles or none, never an exception.
        assert set(judge(seen.options).profiles) <= _PROFILES
        note("accepted, fio agrees")


@needs_fio
@FUZZ
@given(_job)
def test_generated_jobs(text: str) -> None:
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-") as folder:
        handles(text, Path(folder))
        assert not Path("/tmp/PWNED").exists()


@needs_fio
@pytest.mark.parametrize("path", corpus("jobs"), ids=lambda p: p.name)
def test_jobs_that_once_failed(path: Path, tmp_path: Path) -> None:
    handles(path.read_bytes().decode("utf-8", errors="surrogateescape"), tmp_path)
