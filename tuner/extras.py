"""The optional parts of iotuner (pyproject's extras) and the one line a command gives when the
part it needs is not installed.

A managed host installs only the host part (`pip install iotuner`): probe, advise, the tunables
and their journal, verify, rollback, history, status and the daemon. The search, the report's
plots and the local Ansible run come with `iotuner[tune]`, `iotuner[report]` and
`iotuner[apply]` (`iotuner[all]` is everything). Their packages are imported only inside the
commands that use them, so a missing one surfaces as a ModuleNotFoundError there, which
`tuner.cli.main` turns into this module's MissingExtra: exit 1, one line naming the extra.
"""

from __future__ import annotations

from tuner.errors import IotunerError

EXTRA_OF: dict[str, str] = {
    # scikit-optimize brings scikit-learn, scipy and numpy; the confirmation uses scipy.stats.
    "skopt": "tune",
    "sklearn": "tune",
    "scipy": "tune",
    "numpy": "tune",
    "joblib": "tune",
    "threadpoolctl": "tune",
    "matplotlib": "report",
    "ansible": "apply",
}
"""Top-level module -> the extra that installs it (pyproject.toml's optional dependencies)."""


class MissingExtra(IotunerError):
    """A command needs a part of iotuner that is not installed; exit code 1."""


def missing_extra(err: ModuleNotFoundError, command: str | None) -> MissingExtra | None:
    """The one-line error for `err` when the missing module belongs to an extra, else None
    (a module missing from the host part itself is a broken install: its traceback stays)."""
    top = (err.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    what = f"iotuner {command}" if command else "this command"
    return MissingExtra(
        f"{what} needs iotuner[{extra}], not installed here ({top} is missing): "
        f"pip install 'iotuner[{extra}]'"
    )


def require(extra: str, command: str) -> None:
    """MissingExtra unless every package of `extra` imports: for a command that would otherwise
    find out half way, after it has changed the host (apply --measure). It is about to import
    them anyway, so importing them here costs nothing."""
    import importlib

    for top, needs in EXTRA_OF.items():
        if needs != extra:
            continue
        try:
            importlib.import_module(top)
        except ModuleNotFoundError as err:
            missing = missing_extra(err, command)
            if missing is None:  # a package the extra itself depends on: a broken install
                raise
            raise missing from None
