"""Raised when programs executed together take different paths through Python control flow."""


class Divergence(Exception):
    """A scalar used by Python control flow differs between the programs executed together."""

    def __init__(self, value):
        super().__init__("programs diverge on a Python condition")
        self.value = value
