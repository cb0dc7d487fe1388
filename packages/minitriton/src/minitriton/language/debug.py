"""Printing, assertions, compiler hints and barriers."""
from __future__ import annotations

import numpy as np

from ..errors import CompilationError, DeviceAssertionError
from ..context import current
from ..source import kernel_location
from .core import is_tensor, to_tensor
from ..types import _unwrap


def _format(value, row):
    value = _unwrap(value)
    if not is_tensor(value):
        return str(value)
    data = value.data[min(row, value.data.shape[0] - 1)]
    if value.dtype.is_ptr():
        return f"<{value.dtype!r} address(es) {np.array2string(np.asarray(data))}>"
    arr = np.asarray(data)
    if arr.dtype.kind == "V":  # bf16/fp8: print their values, not their bytes
        arr = arr.astype(np.float32)
    return np.array2string(arr, threshold=64, max_line_width=100) if arr.ndim else str(arr)


def device_print(prefix, *args, hex=False):  # noqa: A002 - Triton's name
    """Print, once per program, prefixed with the program id."""
    ctx = current()
    prefix = str(_unwrap(prefix))
    for row in range(len(ctx.pids)):
        pid = ctx.pid_tuple(row)
        body = " ".join(_format(a, row) for a in args)
        ctx.printer(f"pid {pid} {prefix}{' ' if prefix and body else ''}{body}", row)


def kernel_print(*args, sep=" ", end="\n", file=None, flush=False):
    """Python `print` inside a kernel: one line per program, prefixed with the program id."""
    ctx = current()
    for row in range(len(ctx.pids)):
        text = sep.join(_format(a, row) for a in args)
        ctx.printer(f"pid {ctx.pid_tuple(row)} {text}", row)


_STATIC_PRINTED: set = set()  # (kernel, constexprs, call site) whose static_print has printed


def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Print when the kernel compiles: once per kernel, constexpr specialisation and call site
    (the first launch of that specialisation), not once per program or per launch."""
    ctx = current()
    constexprs = tuple(sorted((k, repr(v)) for k, v in ctx.record.constexprs.items()))
    key = (ctx.kernel_name, constexprs, kernel_location())
    if key in _STATIC_PRINTED:
        return
    _STATIC_PRINTED.add(key)
    print(*(_unwrap(v) for v in values), sep=sep, end=end)


def static_assert(cond, msg=""):
    cond = _unwrap(cond)
    if is_tensor(cond):
        raise CompilationError("static_assert needs a compile-time condition (constexpr), got a "
                               "runtime tensor; use tl.device_assert for runtime checks")
    if not cond:
        raise CompilationError(f"Static assertion failed: {_unwrap(msg)}")


def device_assert(cond, msg="", mask=None):
    cond = to_tensor(_unwrap(cond))
    ok = np.asarray(cond.data != 0)
    if mask is not None:
        m = to_tensor(_unwrap(mask)).data != 0
        ok = ok | ~np.broadcast_to(m, np.broadcast_shapes(m.shape, ok.shape))
    if ok.all():
        return
    bad = np.argwhere(~np.broadcast_to(ok, (max(ok.shape[0], 1), *ok.shape[1:])))
    row = int(bad[0][0])
    lanes = [tuple(int(i) for i in b[1:]) for b in bad[:8] if int(b[0]) == row]
    lane_txt = f" at lanes {lanes}" if cond.shape else ""
    err = DeviceAssertionError(f"Device-side assertion failed: {_unwrap(msg) or 'assert'}"
                               f"{lane_txt}")
    err.failing_row = row
    raise err


def debug_barrier():
    """A no-op here: programs of the simulator share no on-chip memory."""


def _hint(input, values):
    return input


def multiple_of(input, values):
    return _hint(input, values)


def max_contiguous(input, values):
    return _hint(input, values)


def max_constancy(input, values):
    return _hint(input, values)


def assume(cond):
    return None
