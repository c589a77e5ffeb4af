"""Verification: a testinfra suite generated from a rendered plan, and running it.

`suite.checks(rendered)` lists what the host should hold, `suite.suite_source(checks)` writes
those checks as a self-contained testinfra module, and `run.run_suite(source)` runs it with
pytest and returns one outcome per check. See docs/verify.md.
"""
