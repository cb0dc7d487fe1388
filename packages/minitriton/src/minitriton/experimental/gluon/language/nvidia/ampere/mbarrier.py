"""`mbarrier` on Ampere and later: init, wait, arrive, invalidate (language/_barriers.py)."""
from __future__ import annotations

from ... import _barriers
from ..._layouts import SwizzledSharedLayout

__all__ = ["arrive", "init", "invalidate", "MBarrierLayout", "wait"]


class MBarrierLayout(SwizzledSharedLayout):
    """The shared layout of mbarriers (one 64-bit word each)."""

    def __init__(self, cga_layout=None):
        super().__init__(vec=1, per_phase=1, max_phase=1, order=[0], cga_layout=cga_layout or [])


def init(mbarrier, count):
    """Initialise the barrier: `count` arrivals complete each phase."""
    _barriers.init(mbarrier, count)


def invalidate(mbarrier):
    _barriers.invalidate(mbarrier)


def wait(mbarrier, phase, pred=True, deps=()):
    """Return once the barrier's phase of parity `phase` has completed."""
    _barriers.wait(mbarrier, phase, pred)


def arrive(mbarrier, *, pred=True):
    _barriers.arrive(mbarrier, 1, pred)
