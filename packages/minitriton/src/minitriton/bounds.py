"""What an access outside an argument says: the OutOfBoundsError of lanes outside the storage
(or outside every buffer), with the distinct offsets, the valid range and the fix, and the
message of lanes outside the view but inside the storage (memory.py, block_pointers.py)."""
from __future__ import annotations

import numpy as np

from .errors import OutOfBoundsError


def oob_error(buf, offsets, op, lanes_total=None, hint=None):
    """The error for lanes at element `offsets` of `buf` (None: outside every buffer).

    The message lists the distinct bad offsets, sorted, with their count; `hint` replaces the
    advice (a block pointer's is `boundary_check`, not a mask). The error keeps `buffer`,
    `bad_offsets` and `lanes_total`, so that a caller that knows more can re-raise it with its
    own hint."""
    n = lanes_total if lanes_total is not None else len(offsets)
    if buf is None:
        return OutOfBoundsError(
            f"{op} out of bounds: {n} lane(s) point outside every buffer of the launch. Check "
            "the pointer arithmetic; a pointer made from an integer (`.to(tl.pointer_type(...))`"
            ") must hold the address of a live torch tensor (`t.data_ptr()`), of a launch "
            "argument, or of a NumPy array given to `minitriton.register_memory`.")
    distinct = np.unique(np.asarray(offsets, dtype=np.int64))
    shown = _shown(distinct - buf.view_lo)
    lo, hi = -buf.view_lo, buf.size - buf.view_lo  # the storage, counted from the view
    valid = f"[{lo}, {hi - 1}]" if buf.size else "empty (the tensor has no elements)"
    if (buf.view_lo, buf.view_hi) != (0, buf.size):
        valid += f" (its storage: {buf.size} elements; the view passed in spans {_view(buf)})"
    below, above = bool(distinct[0] < 0), bool(distinct[-1] >= buf.size)
    if hint is None:
        other = ", other=0.0" if op == "load" else ""
        if below and not above:
            hint = (f"these offsets are below the start of `{buf.name}` (negative: the pointer "
                    f"points before its first element), which a mask like `offsets < n_elements` "
                    f"does not catch; check the index arithmetic (a subtraction, a negative "
                    f"offset or stride, an int32 product that wrapped), or mask them with "
                    f"`mask = offsets >= 0` and `tl.{op}(ptr + offsets, mask=mask{other})`")
        elif below:
            hint = (f"some offsets are below the start of `{buf.name}` (negative) and some past "
                    f"its end; check the index arithmetic, or mask both, e.g. `mask = (offsets "
                    f">= 0) & (offsets < n_elements)` and `tl.{op}(ptr + offsets, "
                    f"mask=mask{other})`")
        else:
            hint = (f"guard the access with a mask, e.g. `mask = offsets < n_elements` and "
                    f"`tl.{op}(ptr + offsets, mask=mask{other})`")
    if buf.expanded and above:
        hint = (f"`{buf.name}` is an expanded tensor (stride 0 in dimension(s) "
                f"{', '.join(map(str, buf.expanded))}): its storage holds only {buf.size} "
                f"element(s), fewer than its shape {buf.shape} suggests; make it contiguous "
                f"(`.contiguous()`, `np.ascontiguousarray`) before the launch, or index it "
                f"with its strides. Else {hint}")
    err = OutOfBoundsError(
        f"{op} out of bounds on argument `{buf.name}` ({buf.description}): {n} lane(s) at "
        f"element offsets [{', '.join(shown)}] ({distinct.size} distinct, sorted), valid "
        f"offsets are {valid}.\nhint: {hint}; nothing was read or written.")
    err.buffer, err.bad_offsets, err.lanes_total = buf, distinct, n
    return err


def _shown(distinct):
    shown = [str(int(o)) for o in distinct[:8]]
    if distinct.size > 9:
        shown += ["...", str(int(distinct[-1]))]
    elif distinct.size == 9:
        shown.append(str(int(distinct[-1])))
    return shown


def _view(buf):
    n = buf.view_hi - buf.view_lo
    return f"[0, {n - 1}]" if n else "nothing (no elements)"


def outside_view_message(buf, offsets, op, lanes_total):
    """What lanes at `offsets` (into `buf.flat`) outside the view but inside the storage are."""
    distinct = np.unique(np.asarray(offsets, dtype=np.int64))
    lo, hi = -buf.view_lo, buf.size - buf.view_lo
    return (f"{op} outside the view of argument `{buf.name}` ({buf.description}) but inside "
            f"its storage: {lanes_total} lane(s) at element offsets "
            f"[{', '.join(_shown(distinct - buf.view_lo))}] ({distinct.size} distinct, "
            f"sorted); the view spans {_view(buf)}, its storage [{lo}, {hi - 1}]")
