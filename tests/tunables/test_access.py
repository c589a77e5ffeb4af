"""The tunables' own interface: values that come back through Ansible's templating."""

from __future__ import annotations

from tuner.tunables.access import like_reading


def test_values_templated_by_ansible_are_read_back_in_the_readings_type() -> None:
    assert like_reading(128, "4092") == 4092
    assert like_reading(128, " 4092 ") == 4092
    assert like_reading(128, "none") == "none"
    assert like_reading(128, "٣") == "٣", "only ASCII digits make a number"
    rmem = (4096, 131072, 6291456)
    assert like_reading(rmem, "[4096, 131072, 125000000]") == (4096, 131072, 125000000)
    assert like_reading(rmem, "4096 131072 125000000") == (4096, 131072, 125000000)
    assert like_reading("none", "mq-deadline") == "mq-deadline"
