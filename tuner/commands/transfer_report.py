"""What a transfer tune shows when it ends, for the lab's and the peer's command alike."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from tuner.results import save_result
from tuner.tune.result import TuneResult
from tuner.tune.transfer_explain import Explanation, explanation_table
from tuner.tune.view import print_changes, render_summary


def report_transfer(
    console: Console,
    result: TuneResult,
    explanation: Explanation,
    document: dict[str, Any],
    as_json: bool,
    *,
    lab: bool,
) -> None:
    """Save the tune's document as the latest result, then print it as JSON, or the summary,
    the explanation in the paper's terms and the changes."""
    save_result("tune", document, lab=lab)
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    console.print(render_summary(result))
    console.print(explanation_table(explanation))
    print_changes(console, result)
