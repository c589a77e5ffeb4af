"""The errors a command reports to its user as one line, with the documented exit code.

Exit codes: 0 ok, 1 findings or a failed operation, 2 bad input (a path, a file, an argument).
"""


class IotunerError(Exception):
    """A failure the user should see as one line; exit code 1."""

    exit_code = 1


class BadInput(IotunerError):
    """The user's input is at fault (missing root, malformed file, unknown name); exit code 2."""

    exit_code = 2
