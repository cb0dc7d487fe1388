"""The fuzzer's own model of Triton's scalar types and promotion rules.

Written from docs/numerics.md and Triton's `semantic.py` (`computation_type_impl`), not taken
from minitriton, so that a kernel's predicted result type (checked in the kernel with
`tl.static_assert`) is an independent claim that both minitriton and Triton must agree with.
"""
from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np

BOOL, INT, FLOAT = 0, 1, 2


class Ty(NamedTuple):
    name: str      # Triton's short name: fp16, int8, int1...
    tl: str        # how kernel source spells it: tl.float16
    np: object     # the NumPy dtype of its values
    bits: int
    kind: int      # BOOL < INT < FLOAT, as Triton orders literal kinds
    signed: bool

    def __repr__(self):
        return self.name

    @property
    def is_float(self):
        return self.kind == FLOAT

    @property
    def is_int(self):  # integers, bool excluded
        return self.kind == INT

    @property
    def unsigned(self):
        return self.kind == INT and not self.signed

    @property
    def container(self):
        """The type its values travel in through memory: unsigned integers as the signed type of
        the same width (and a bitcast in the kernel), bool as int8, so that every buffer is a
        dtype torch has on CUDA."""
        if self.kind == BOOL:
            return TYPES["int8"]
        if self.unsigned:
            return TYPES["int" + self.name[4:]]
        return self

    @property
    def eps(self):
        """Unit roundoff of a float type (half an ulp of 1)."""
        return {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "fp32": 2.0 ** -24,
                "fp64": 2.0 ** -53}[self.name]


def _t(name, tl, npdt, bits, kind, signed):
    return Ty(name, f"tl.{tl}", np.dtype(npdt), bits, kind, signed)


TYPES = {t.name: t for t in [
    _t("int1", "int1", np.bool_, 1, BOOL, False),
    _t("int8", "int8", np.int8, 8, INT, True),
    _t("int16", "int16", np.int16, 16, INT, True),
    _t("int32", "int32", np.int32, 32, INT, True),
    _t("int64", "int64", np.int64, 64, INT, True),
    _t("uint8", "uint8", np.uint8, 8, INT, False),
    _t("uint16", "uint16", np.uint16, 16, INT, False),
    _t("uint32", "uint32", np.uint32, 32, INT, False),
    _t("uint64", "uint64", np.uint64, 64, INT, False),
    _t("fp16", "float16", np.float16, 16, FLOAT, True),
    _t("bf16", "bfloat16", ml_dtypes.bfloat16, 16, FLOAT, True),
    _t("fp32", "float32", np.float32, 32, FLOAT, True),
    _t("fp64", "float64", np.float64, 64, FLOAT, True),
]}
B1, I8, I16, I32, I64 = (TYPES[n] for n in ("int1", "int8", "int16", "int32", "int64"))
U8, U16, U32, U64 = (TYPES[n] for n in ("uint8", "uint16", "uint32", "uint64"))
F16, BF16, F32, F64 = (TYPES[n] for n in ("fp16", "bf16", "fp32", "fp64"))
INTS = [I8, I16, I32, I64, U8, U16, U32, U64]
FLOATS = [F16, BF16, F32, F64]


def int_range(ty):
    if ty.kind == BOOL:
        return 0, 1
    info = np.iinfo(ty.np)
    return int(info.min), int(info.max)


def literal_type(value):
    """The type Triton gives a Python literal (`to_tensor`)."""
    if isinstance(value, bool):
        return B1
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return I32
        if value < 2**32:
            return U32
        if value < 2**63:
            return I64
        return U64
    a = abs(value)
    if a == 0 or a == float("inf") or a != a or 2.0 ** -126 <= a <= float(np.finfo(np.float32).max):
        return F32
    return F64


def integer_promote(a, b):
    if a.signed == b.signed:
        return a if a.bits > b.bits else b
    if not a.signed:
        return a if a.bits >= b.bits else b
    return b if b.bits >= a.bits else a


def computation_type(a, a_lit, b, b_lit, div_or_mod=False):
    """The type `a op b` computes in (None where Triton refuses), as computation_type_impl."""
    if a_lit != b_lit:
        lit, ten = (a, b) if a_lit else (b, a)
        if lit.kind <= ten.kind:
            if div_or_mod and ten in (F16, BF16):
                return F32
            return ten
    if F64 in (a, b):
        return F64
    if F32 in (a, b):
        return F32
    if F16 in (a, b):
        return F32 if div_or_mod else F16
    if a == BF16 and b == BF16:
        return F32 if div_or_mod else BF16
    if BF16 in (a, b):
        return F32
    if a.kind == FLOAT or b.kind == FLOAT:
        return None
    if div_or_mod and a.signed != b.signed:
        return None
    return integer_promote(a, b)


def literal_fits(value, ty):
    """Whether a literal can become an operand of type `ty` without Triton's range error."""
    if ty.kind == FLOAT:
        return True
    if isinstance(value, float):
        return False
    lo, hi = int_range(ty)
    return lo <= value <= hi


def bitcast_partners(ty):
    """Types of the same width that `.to(..., bitcast=True)` can reach."""
    return [t for t in TYPES.values() if t.bits == ty.bits and t != ty and t.kind != BOOL]
