"""Hints that ask L2 for data before a kernel loads it (GPU only: inline PTX).

`l2_prefetch` issues `prefetch.global.L2` for the 128-byte lines of a run of elements: no
register is held and nothing waits, so a program can ask for what it (or a program after it)
will read later while it does something else, such as waiting at an exchange's meeting
(docs/decisions.md#rmsnorm-backward-prefetch-depth). A hint, not a load: the simulator runs
no inline PTX, so the launch plans ask for these only on a GPU.
"""
from __future__ import annotations

from ..backend import tl, triton


@triton.jit
def l2_prefetch(base, count, keep, SPAN: tl.constexpr):
    """The 128-byte lines of base[0:min(count, SPAN)] fetched into L2 now, where `keep` (a
    scalar); SPAN (a power of two) at least a line of base's elements. Each line is asked for
    by every thread that holds it in this helper's layout; a run that does not start on a
    line's boundary leaves its last line unasked."""
    LINE: tl.constexpr = 1024 // base.dtype.element_ty.primitive_bitwidth  # elements a line
    tl.static_assert(SPAN >= LINE, "l2_prefetch: a span of less than a line")
    lines = tl.arange(0, SPAN // LINE) * LINE
    tl.inline_asm_elementwise(
        "{\n.reg .pred p;\nsetp.ne.s32 p, $2, 0;\n@p prefetch.global.L2 [$1];\n"
        "mov.b32 $0, 0;\n}", "=r,l,r", [base + lines, (keep & (lines < count)).to(tl.int32)],
        dtype=tl.int32, is_pure=False, pack=1)
