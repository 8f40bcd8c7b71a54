"""Errors the CLI turns into one line on stderr and exit code 2."""


class UserError(Exception):
    """Bad input or a missing service: the user can fix it; no traceback is shown."""
