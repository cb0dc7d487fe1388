"""The atomics: `tl.atomic_add/max/min/and/or/xor/xchg` and `tl.atomic_cas`.

Each returns the value every lane saw before its update. Lanes of one step that hit the same
element are serialised in lane order, as the GPU serialises them.

An atomic that changes nothing (a failing atomic_cas, `atomic_add(p, 0)`, an xchg of the value
already there) is a *poll*. A program that polls and sees again what it saw before waits for
another program (a spin lock, a flag, a ticket): it raises `Wait` or, running as a coroutine,
is suspended so that the others run (`runtime/executors.py`), as on a GPU where they run
concurrently; when every unfinished program waits, the executor reports a DeadlockError.
"""
from __future__ import annotations

import numpy as np

from ..context import current
from ..errors import CompilationError
from ..types import _unwrap, int1
from .access import Lanes, check_mask, poll
from .block_pointers import block_pointer
from .core import broadcast_to, cast, expand_to_rank, tensor, tensor_member, to_tensor
from .pointers import validate_pointer


def _rmw(op):
    def fn(old, val):
        if op == "add":
            return old + val
        if op == "max":
            return np.fmax(old, val) if old.dtype.kind in "fV" else np.maximum(old, val)
        if op == "min":
            return np.fmin(old, val) if old.dtype.kind in "fV" else np.minimum(old, val)
        if op == "and":
            return old & val
        if op == "or":
            return old | val
        if op == "xor":
            return old ^ val
        if op == "xchg":
            return val
        raise AssertionError(op)
    return fn


def _atomic_apply(buf, idx, vals, update):
    """Apply an RMW to every lane in lane order; return the value each lane saw."""
    flat = buf.flat
    _, first = np.unique(idx, return_index=True)
    with np.errstate(all="ignore"):
        if first.size == idx.size:
            old = flat[idx].copy()
            flat[idx] = update(old, vals).astype(flat.dtype)
            return old
        old = np.empty(idx.shape, dtype=flat.dtype)
        for i in range(idx.size):  # duplicates within one step: serialise, as the GPU does
            old[i] = flat[idx[i]]
            flat[idx[i]] = np.asarray(update(old[i:i + 1], vals[i:i + 1])).astype(flat.dtype)[0]
        return old


def _atomic(op, pointer, val, mask, sem, scope):
    ctx = current()
    pointer = validate_pointer(_unwrap(pointer), f"atomic_{op}")
    if isinstance(pointer, block_pointer):
        raise CompilationError(f"tl.atomic_{op} does not take block pointers")
    _check_sem(sem, scope)
    elt = pointer.dtype.element_ty
    # Triton's atom_red_typechecking_impl: 16-bit floats only for add, no 16-bit integers and
    # nothing narrower (int8, uint8, fp8, int1)
    if (elt.name in ("fp16", "bf16") and op != "add") or elt.name in ("int16", "uint16") or \
            elt.primitive_bitwidth < 16 or (op in ("and", "or", "xor") and not elt.is_int()):
        raise CompilationError(f"atomic_{op} does not support {elt}")
    shape = pointer.shape
    val = to_tensor(_unwrap(val))
    if not shape and val.shape:
        raise CompilationError("Value argument cannot be block type if pointer argument is not a "
                               "block")
    val = broadcast_to(cast(val, elt), shape)
    mask = check_mask(_unwrap(mask), shape) if _unwrap(mask) is not None else None
    lanes = Lanes(ctx, pointer, mask, (val,))
    vals = np.broadcast_to(expand_to_rank(val, len(shape)), (lanes.lanes, *shape))
    result = np.zeros((lanes.lanes, *shape), dtype=elt.np)
    update = _rmw(op)
    compute = np.float32 if elt.is_floating() and elt.primitive_bitwidth < 32 else None
    for acc in lanes.accesses(ctx, f"atomic_{op}"):
        active, idx = acc.lane_mask(), acc.offsets()
        _before(ctx, acc)
        v = vals[active] if compute is None else vals[active].astype(compute)
        upd = update if compute is None else (lambda o, x, u=update: u(o.astype(compute), x))
        old = _atomic_apply(acc.buf, idx.ravel(), v.ravel(), upd)
        result[active] = old.reshape(idx.shape)
        for hook in ctx.hooks["after_atomic"]:
            hook(acc, op, old, None, v.ravel(), _unwrap(sem))
        poll(ctx, acc.buf, idx.ravel(), old, None)
    return tensor(result, elt, shape)


def _before(ctx, acc):
    for hook in ctx.hooks["on_atomic"]:
        hook(acc)
    ctx.memory.before_write(acc.buf, acc.idx)


def _check_sem(sem, scope):
    sem, scope = _unwrap(sem), _unwrap(scope)
    if sem not in (None, "acquire", "release", "acq_rel", "relaxed"):
        raise CompilationError(f"Memory semantic {sem} not supported")
    if scope not in (None, "gpu", "cta", "sys"):
        raise CompilationError(f"Memory scope {scope} not supported")


def _make_atomic(op):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return _atomic(op, pointer, val, mask, sem, scope)
    fn.__name__ = f"atomic_{op}"
    fn.__doc__ = f"Atomic {op}: returns the value each lane saw before its update."
    return fn


atomic_add = _make_atomic("add")
atomic_max = _make_atomic("max")
atomic_min = _make_atomic("min")
atomic_and = _make_atomic("and")
atomic_or = _make_atomic("or")
atomic_xor = _make_atomic("xor")
atomic_xchg = _make_atomic("xchg")
for _fn in (atomic_add, atomic_max, atomic_min, atomic_and, atomic_or, atomic_xor, atomic_xchg):
    tensor_member(_fn)  # ptr.atomic_add(val, mask=m), as in Triton


@tensor_member
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Compare-and-swap: where memory equals `cmp`, write `val`; returns the old value."""
    ctx = current()
    pointer = validate_pointer(_unwrap(pointer), "atomic_cas")
    _check_sem(sem, scope)
    elt = pointer.dtype.element_ty
    if elt.primitive_bitwidth not in (16, 32, 64):
        raise CompilationError("atomic_cas only supports elements with width {16, 32, 64}")
    shape = pointer.shape
    cmp = broadcast_to(cast(to_tensor(_unwrap(cmp)), elt), shape)
    val = broadcast_to(cast(to_tensor(_unwrap(val)), elt), shape)
    lanes = Lanes(ctx, pointer, None, (cmp, val))
    c = np.broadcast_to(expand_to_rank(cmp, len(shape)), (lanes.lanes, *shape))
    v = np.broadcast_to(expand_to_rank(val, len(shape)), (lanes.lanes, *shape))
    result = np.zeros((lanes.lanes, *shape), dtype=elt.np)
    for acc in lanes.accesses(ctx, "atomic_cas"):
        active, idx = acc.lane_mask(), acc.offsets()
        _before(ctx, acc)
        flat_idx, cl, vl = idx.ravel(), c[active].ravel(), v[active].ravel()
        old = np.empty(flat_idx.shape, dtype=elt.np)
        for i in range(flat_idx.size):  # serialised: CAS order is what spin locks rely on
            old[i] = acc.buf.flat[flat_idx[i]]
            if old[i] == cl[i]:
                acc.buf.flat[flat_idx[i]] = vl[i]
        result[active] = old.reshape(idx.shape)
        for hook in ctx.hooks["after_atomic"]:
            hook(acc, "cas", old, cl, vl, _unwrap(sem))
        poll(ctx, acc.buf, flat_idx, old, cl)
    return tensor(result, elt, shape)


@tensor_member
def atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None):
    """Spin until memory at `pointer` equals `expected_value` (Triton 3.9); returns a boolean
    block of the pointer's shape: True where the value was seen. While it differs the program
    waits for the others, as a spin loop does (a DeadlockError if none can set it). With
    `timeout_ns` the simulator, which has no clock, reads each element once: False where the
    value was not there then."""
    ctx = current()
    pointer = validate_pointer(_unwrap(pointer), "atomic_poll")
    if isinstance(pointer, block_pointer):
        raise CompilationError("tl.atomic_poll does not take block pointers")
    sem, scope, timeout = _unwrap(sem), _unwrap(scope), _unwrap(timeout_ns)
    if isinstance(timeout, int) and timeout < 0:
        raise CompilationError("atomic_poll timeout_ns must be non-negative")
    if timeout is not None and not (isinstance(timeout, int) or
                                    (isinstance(timeout, tensor) and not timeout.shape
                                     and timeout.dtype.is_int())):
        raise CompilationError("atomic_poll timeout_ns must be a scalar integer")
    elt = pointer.dtype.element_ty
    if not elt.is_int() or elt.primitive_bitwidth not in (16, 32, 64):
        raise CompilationError("atomic_poll only supports integer elements with width "
                               "{16, 32, 64}")
    if sem not in (None, "acquire", "relaxed"):
        raise CompilationError("atomic_poll only supports acquire and relaxed semantics")
    _check_sem(sem, scope)
    shape = pointer.shape
    expected = broadcast_to(cast(to_tensor(_unwrap(expected_value)), elt), shape)
    lanes = Lanes(ctx, pointer, None, (expected,))
    want = np.broadcast_to(expand_to_rank(expected, len(shape)), (lanes.lanes, *shape))
    seen = np.zeros((lanes.lanes, *shape), dtype=bool)
    while True:
        for acc in lanes.accesses(ctx, "atomic_poll"):
            active, idx = acc.lane_mask(), acc.offsets()
            for hook in ctx.hooks["on_atomic"]:
                hook(acc)
            old = acc.buf.flat[idx.ravel()].copy()
            seen[active] = (old == want[active].ravel()).reshape(idx.shape)
            for hook in ctx.hooks["after_atomic"]:
                hook(acc, "poll", old, None, None, sem or "acquire")
            if timeout is None and not seen[active].all():
                poll(ctx, acc.buf, idx.ravel(), old, want[active].ravel())
        if timeout is not None or seen.all():
            return tensor(seen, int1, shape)
