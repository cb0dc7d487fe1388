"""`triton.language.extra.cuda`: libdevice and NVIDIA intrinsics, for one simulated launch.

`gdc_wait`/`gdc_launch_dependents` (programmatic dependent launch) order one grid against the
next one on the GPU; minitriton runs a launch to completion before the next starts, so both are
no-ops that only check they are called inside a kernel. `globaltimer` reads a nanosecond clock
(the host's, so it increases but says nothing about GPU time); `smid` is the program's
streaming multiprocessor as a round-robin over the emulated GPU's 132 SMs (an H100/H200).
"""
from __future__ import annotations

import time

import numpy as np

from .... import types as _t
from ....context import current
from ...core import literal, tensor
from . import libdevice  # noqa: F401 - triton.language.extra.cuda.libdevice

NUM_SMS = 132  # H100 SXM and H200: the emulated target


def gdc_wait():
    current()


def gdc_launch_dependents():
    current()


def globaltimer():
    current()
    return literal(time.perf_counter_ns(), _t.int64)


def smid():
    ctx = current()
    pids = ctx.pids.astype(np.int64)
    linear = pids[:, 0] + ctx.grid[0] * (pids[:, 1] + ctx.grid[1] * pids[:, 2])
    return tensor((linear % NUM_SMS).astype(np.int32), _t.int32, [])


def num_threads():
    return literal(32 * num_warps().data[0], _t.int32)


def num_warps():
    ctx = current()
    return literal(int(ctx.record.options.get("num_warps") or 4), _t.int32)  # Triton's default
