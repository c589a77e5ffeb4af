"""A process that changes settings through the engine and journal, for the tests to kill.

    python -m tests.journal_child ROOT MODE KEY=TARGET=VALUE...

MODE: `sleep` applies and sleeps (kill it); `signals` does the same inside restore_on_signals;
`exit` applies and dies at once without restoring; `trials` applies and restores the settings
over and over like a tune, until killed. It prints "applied" once the values are written.
The journal is state_dir()/state.db, so the test sets IOTUNER_STATE_DIR.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal, restore_on_signals


def parse(words: list[str]) -> dict[tuple[str, str], object]:
    settings: dict[tuple[str, str], object] = {}
    for word in words:
        key, target, value = word.split("=", 2)
        settings[(key, target)] = int(value) if value.isdigit() else value
    return settings


def main() -> None:
    root, mode, *words = sys.argv[1:]
    settings = parse(words)
    journal = Journal(command=f"journal_child {mode}")
    engine = TunableEngine(Path(root), journal)
    if mode == "signals":
        with restore_on_signals(engine):
            engine.apply(settings)
            print("applied", flush=True)
            time.sleep(120)
        return
    if mode == "trials":
        first = True
        while True:
            engine.apply(settings)
            if first:
                print("applied", flush=True)
                first = False
            time.sleep(0.01)
            engine.restore()
    engine.apply(settings)
    print("applied", flush=True)
    if mode == "exit":
        os._exit(0)
    time.sleep(120)


if __name__ == "__main__":
    main()
