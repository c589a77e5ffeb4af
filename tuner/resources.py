"""Where the installed package keeps its data: the rule base and the Ansible playbooks."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    # A wheel carries the data inside the package (see pyproject's force-include); a checkout or
    # an editable install has it at the top of the repository, beside tuner/.
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"iotuner's {name}/ directory is missing from {_PACKAGE}")


def rules_dir() -> Path:
    """The directory holding the rule base (`rules/*.yaml`)."""
    return _data_dir("rules")


def playbooks_dir() -> Path:
    """The directory holding the Ansible role and playbooks."""
    return _data_dir("playbooks")
