"""`mbarrier` on Hopper: Ampere's, with transaction bytes (`expect`) and counted arrivals."""
from __future__ import annotations

from ... import _barriers
from ..ampere.mbarrier import MBarrierLayout, init, invalidate, wait

__all__ = ["arrive", "expect", "init", "invalidate", "MBarrierLayout", "wait"]


def expect(mbarrier, bytes, pred=True):  # noqa: A002 - Gluon's name
    """One arrival that announces `bytes` bytes of copies to come."""
    _barriers.expect(mbarrier, bytes, pred)


def arrive(mbarrier, *, count=1, pred=True):
    _barriers.arrive(mbarrier, count, pred)
