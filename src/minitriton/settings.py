"""minitriton's settings, in one frozen dataclass.

Set them globally with `minitriton.configure(...)` (a context manager, or a plain call), or
from the environment (`MINITRITON_EXECUTOR=sequential`).
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os

EXECUTORS = ("sequential",)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How launches run.

    executor: "sequential" runs programs one after another, like a debugger: `print` and
        `breakpoint()` work per program.
    """

    executor: str = "sequential"

    def __post_init__(self):
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown executor {self.executor!r}; choose one of {EXECUTORS}")

    @classmethod
    def from_env(cls):
        return cls(executor=os.environ.get("MINITRITON_EXECUTOR", cls.executor))


_SETTINGS: contextvars.ContextVar = contextvars.ContextVar("minitriton_settings", default=None)


def current_settings() -> Settings:
    s = _SETTINGS.get()
    return s if s is not None else Settings.from_env()


class configure(contextlib.AbstractContextManager):
    """`minitriton.configure(executor=...)`: change settings, for a `with` block or from now on."""

    def __init__(self, **changes):
        self._token = _SETTINGS.set(dataclasses.replace(current_settings(), **changes))

    def __exit__(self, *exc):
        _SETTINGS.reset(self._token)
        return False
