"""`python -m tuner.apply.boot KEY@TARGET=VALUE ...`: what iotuner-boot.service runs at boot.

IRQ numbers and CPU layouts change from boot to boot, so the unit carries the policy
("irq.affinity@0000:3b:00.0=local-node") and this resolves and writes it on the host as it is
now. One line per setting on stdout for the journal; exit 1 when any could not be set.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError
from tuner.tunables.sysroot import SysRoot, live_sysroot


def parse(arg: str) -> tuple[str, str, str]:
    """ "KEY@TARGET=VALUE" -> (key, target, value); ValueError when it is not that shape."""
    head, eq, value = arg.partition("=")
    key, at, target = head.partition("@")
    if not (eq and at and key and target):
        raise ValueError(f"{arg!r}: expected KEY@TARGET=VALUE")
    return key, target, value


def main(argv: Sequence[str], root: SysRoot | None = None) -> int:
    """Apply each setting; 0 when all were set, 1 otherwise (the rest are still tried).
    `root`: the host to write (the live one unless a test gives its fixture tree)."""
    tunables = Tunables(live_sysroot() if root is None else root)
    failed = 0
    for arg in argv:
        try:
            key, target, value = parse(arg)
            written = tunables.write(key, target, value)
        except (ValueError, TunableError) as err:
            print(f"iotuner-boot: {err}", file=sys.stderr)
            failed += 1
            continue
        print(f"iotuner-boot: {key} on {target} = {written}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
