"""Errors that are the user's to fix (a bad setting, a bad flag value), apart from bugs."""


class UserError(Exception):
    """Bad input: the command line prints it as one line and exits with code 2."""


class BackendError(UserError, ValueError):
    """TRITONLAB_BACKEND names no backend."""
