"""Evidence templates read as sentences: sizes for people, plurals that agree, no 'None'."""

from __future__ import annotations

import pytest

from tuner.rules.templates import TemplateError, fields, fill


def test_counts_agree_with_their_noun() -> None:
    template = "{name} has {hdd_count:count rotating disk}"
    assert fill(template, {"name": "db1", "hdd_count": 1}) == "db1 has 1 rotating disk"
    assert fill(template, {"name": "db1", "hdd_count": 3}) == "db1 has 3 rotating disks"
    assert fill("{n:count bus}", {"n": 2}) == "2 buses"


def test_sizes_print_for_people_and_unknowns_as_a_question_mark() -> None:
    assert fill("a drive of {size_bytes:size}", {"size_bytes": 2527650201}) == "a drive of 2.4 GiB"
    assert fill("{x} and {y:size}", {"x": None}) == "? and ?"
    assert fill("{ratio} {ok}", {"ratio": 2.0, "ok": True}) == "2 yes"


def test_small_measured_figures_keep_their_significant_digits() -> None:
    """A measured 61 Mbit/s path in Gb/s reads 0.0612, not 0.06; larger figures keep two
    decimals."""
    assert fill("a {gbps} Gb/s path", {"gbps": 0.06123}) == "a 0.0612 Gb/s path"
    assert fill("{r}", {"r": 1.3333}) == "1.33"


@pytest.mark.parametrize("template", ["{a:bytes}", "{a!r}", "{a:count}", "{unclosed"])
def test_unknown_formats_are_refused_at_load_time(template: str) -> None:
    with pytest.raises(TemplateError):
        fields(template)


def test_fields_names_every_fact_used() -> None:
    assert fields("{a} of {b:size}, {c:count disk}") == {"a", "b", "c"}
