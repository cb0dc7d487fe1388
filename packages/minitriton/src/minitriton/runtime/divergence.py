"""Raised when programs executed together take different paths through Python control flow."""


class Divergence(Exception):
    """A scalar that Python control flow depends on differs between the programs executed
    together. `decisions` holds each program's decision (truth value, integer, float); the
    lockstep executor undoes the group's writes and re-runs it split by these decisions."""

    def __init__(self, decisions):
        super().__init__("programs diverge on a Python condition")
        self.decisions = decisions
