"""One line for a YAML file that does not parse: the file, the line, and what is wrong.

PyYAML's own message names '<unicode string>' and spans several lines with a caret drawing;
people need "plan.yaml:5: not valid YAML (expected ',' or ']', but got ':')".
"""

from __future__ import annotations

import yaml


def yaml_error(where: str, err: yaml.YAMLError) -> str:
    """'WHERE:LINE: not valid YAML (problem)', the line counted from 1 as editors do."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or "cannot be parsed"
    context = getattr(err, "context", None)
    detail = f"{problem}, {context}" if context else problem
    return f"{where}{line}: not valid YAML ({detail})"
