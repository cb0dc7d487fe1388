"""Errors that are the user's to fix (a bad setting, a bad flag value), apart from bugs."""


class UserError(Exception):
    """Bad input: the command line prints it as one line and exits with code 2."""


BACKENDS = ("triton", "sim", "interpret")  # what TRITONLAB_BACKEND may name


class BackendError(UserError, ValueError):
    """TRITONLAB_BACKEND names no backend."""

    @classmethod
    def unknown(cls, name):
        return cls(f"TRITONLAB_BACKEND={name!r}: choose one of {', '.join(BACKENDS)}")
