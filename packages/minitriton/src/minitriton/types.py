"""Triton's scalar types, pointer and block types, `constexpr`, and the promotion rules.

The promotion rules follow `triton/language/semantic.py` (`computation_type_impl`,
`integer_promote_impl`, `to_tensor_type`); docs/numerics.md writes them out as a table.
"""
from __future__ import annotations

import importlib
import math
import numbers
import sys

import numpy as np

from .errors import CompilationError


_BY_NAME: dict = {}  # name -> the dtype of that name (filled below the definitions)
_NO_NUMPY = object()  # a type without a NumPy counterpart


class dtype:
    """A scalar element type, named as Triton names it (`fp32`, `bf16`, `i32`...)."""

    SINT = SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT = UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP = FP_TYPES = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16",
                     "fp32", "fp64")
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")
    OTHER_TYPES = ("void",)

    def __init__(self, name, np_dtype=None, bitwidth=None, mantissa=0, exponent_bias=None):
        """`dtype("fp32")` (Triton's form: one of the names above) is the same type as
        `tl.float32`; the longer form defines the types below."""
        if np_dtype is None:
            known = _BY_NAME.get(name)
            if known is None:
                raise ValueError(f"unknown dtype name {name!r}: one of "
                                 f"{', '.join(sorted(_BY_NAME))}")
            self.__dict__.update(known.__dict__)
            return
        self.name = name
        if isinstance(np_dtype, str) and np_dtype.startswith("ml_dtypes."):
            self._ml_dtypes_name = np_dtype[len("ml_dtypes."):]  # `np` made when first asked
        elif np_dtype is not _NO_NUMPY:
            self.np = np.dtype(np_dtype)
        self.primitive_bitwidth = bitwidth
        self.fp_mantissa_width = mantissa
        if exponent_bias is not None:
            self.exponent_bias = exponent_bias

    value_scale = 1.0  # what a value held in `np` is multiplied by (fp8e4b15's bias)

    def __getattr__(self, attr):
        # only for attributes not set: `np` of bf16 and the fp8 types, whose NumPy dtypes come
        # from ml_dtypes, imported here on first use (its extension takes about 1 s to load)
        if attr != "np":
            raise AttributeError(attr)
        name = self.__dict__.get("_ml_dtypes_name")
        if name is None:
            raise CompilationError(f"minitriton has no arithmetic for {self.name} (no NumPy "
                                   f"type holds it); docs/limitations.md")
        self.np = np.dtype(getattr(importlib.import_module("ml_dtypes"), name))
        return self.np

    # Triton's predicates
    def is_floating(self):
        return self.name in dtype.FP

    def is_int(self):
        return self.name in dtype.SINT or self.name in dtype.UINT

    def is_bool(self):
        return self.name == "int1"

    def is_int_signed(self):
        return self.name in dtype.SINT

    def is_int_unsigned(self):
        return self.name in dtype.UINT

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    def is_fp8(self):
        return self.name.startswith("fp8")

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    @property
    def int_bitwidth(self):
        return self.primitive_bitwidth

    @property
    def int_signedness(self):
        return "signed" if self.is_int_signed() else "unsigned"

    def kind(self):
        return 0 if self.is_bool() else 1 if self.is_int() else 2

    @property
    def scalar(self):
        return self

    @property
    def itemsize(self):
        return self.np.itemsize

    def to(self, *args, **kwargs):  # pragma: no cover - guard against misuse
        raise CompilationError(f"`{self}` is a dtype, not a tensor")

    def __eq__(self, other):
        if not isinstance(other, dtype):  # a constexpr holding a dtype compares as the dtype
            other = getattr(other, "value", None)
        return isinstance(other, dtype) and not other.is_ptr() and other.name == self.name

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{_LONG_NAMES.get(self.name, self.name)}"


class pointer_type(dtype):
    """`*fp32` and friends. `element_ty` is the pointee type."""

    def __init__(self, element_ty, address_space=1, const=False):
        element_ty = _unwrap(element_ty)
        super().__init__(f"*{element_ty.name}", np.int64, 64)
        self.element_ty = element_ty
        self.const = const

    def is_ptr(self):
        return True

    def is_floating(self):
        return False

    def is_int(self):
        return False

    def is_bool(self):
        return False

    def kind(self):
        return 1

    def __eq__(self, other):
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty and \
            other.const == self.const

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"pointer<{self.element_ty}>"


class block_type:
    """The type of a block tensor: element type and shape (`x.type`)."""

    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = list(shape)

    scalar = property(lambda self: self.element_ty)
    name = property(lambda self: f"<{self.shape}, {self.element_ty}>")

    def is_block(self):
        return True

    def is_ptr(self):
        return False

    def get_block_shapes(self):
        return self.shape

    @property
    def numel(self):
        return math.prod(self.shape)

    @property
    def nbytes(self):
        return self.numel * (self.element_ty.primitive_bitwidth // 8)

    def __eq__(self, other):
        return isinstance(other, block_type) and (other.element_ty, other.shape) == (
            self.element_ty, self.shape)

    def __repr__(self):
        return f"<{self.shape}, {self.element_ty}>"


class distributed_type(block_type):
    """A Gluon block's type: its element type, shape and the layout its kernel gave it."""

    def __init__(self, element_ty, shape, layout):
        super().__init__(element_ty, shape)
        self.layout = layout

    def with_element_ty(self, scalar_ty):
        return distributed_type(scalar_ty, self.shape, self.layout)

    def __eq__(self, other):
        return super().__eq__(other) and getattr(other, "layout", None) == self.layout

    def __repr__(self):
        return f"<{self.shape}, {self.element_ty}, {self.layout}>"


int1 = dtype("int1", np.bool_, 1)
int8 = dtype("int8", np.int8, 8)
int16 = dtype("int16", np.int16, 16)
int32 = dtype("int32", np.int32, 32)
int64 = dtype("int64", np.int64, 64)
uint8 = dtype("uint8", np.uint8, 8)
uint16 = dtype("uint16", np.uint16, 16)
uint32 = dtype("uint32", np.uint32, 32)
uint64 = dtype("uint64", np.uint64, 64)
float8e4nv = dtype("fp8e4nv", "ml_dtypes.float8_e4m3fn", 8, 3, 7)
float8e5 = dtype("fp8e5", "ml_dtypes.float8_e5m2", 8, 2, 15)
float8e4b8 = dtype("fp8e4b8", "ml_dtypes.float8_e4m3fnuz", 8, 3, 8)
float8e5b16 = dtype("fp8e5b16", "ml_dtypes.float8_e5m2fnuz", 8, 2, 16)
# fp8e4b15 (pre-Hopper): e4m3fn's bits with an exponent bias of 15, not 7, so every value is
# e4m3fn's times 2**-8 (NaN at S.1111.111 as in e4m3fn); held in e4m3fn arrays, `value_scale`
# converts where values meet other types (language/core.py's cast, language/dot.py); abs,
# max, where and moves work on e4m3fn's values as they are, which scale alike
float8e4b15 = dtype("fp8e4b15", "ml_dtypes.float8_e4m3fn", 8, 3, 15)
float8e4b15.value_scale = 2.0 ** -8
float16 = dtype("fp16", np.float16, 16, 10, 15)
bfloat16 = dtype("bf16", "ml_dtypes.bfloat16", 16, 7, 127)
float32 = dtype("fp32", np.float32, 32, 23, 127)
float64 = dtype("fp64", np.float64, 64, 52, 1023)

_LONG_NAMES = {"int1": "int1", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
               "fp64": "float64", "fp8e4nv": "float8e4nv", "fp8e5": "float8e5",
               "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16", "fp8e4b15": "float8e4b15"}
ALL_DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float8e4nv,
              float8e5, float16, bfloat16, float32, float64)
FP8_VARIANTS = (float8e4b8, float8e5b16, float8e4b15)  # other fp8 encodings (AMD, pre-Hopper)
ML_DTYPES = (float8e4nv, float8e5, bfloat16)  # their NumPy dtypes need ml_dtypes
_BY_NAME.update((d.name, d) for d in ALL_DTYPES + FP8_VARIANTS)

# Triton's names of types in signatures and type strings (`_utils.type_canonicalisation_dict`):
# each spelling -> the dtype's name here
_SPELLINGS = {
    "bool": "int1", "int1": "int1", "uint1": "int1", "i1": "int1", "u1": "int1",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "int": "int32",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32",
    "double": "fp64", "float64": "fp64", "float8e4nv": "fp8e4nv", "float8_e4m3fn": "fp8e4nv",
    "float8e5": "fp8e5", "float8_e5m2": "fp8e5", "float8e4b8": "fp8e4b8",
    "float8_e4m3fnuz": "fp8e4b8", "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16",
    "float8e4b15": "fp8e4b15"}


def str_to_ty(name, c=None):
    """The type a type string names, as `triton.language.str_to_ty`: `fp32`, `i32`, `u8`,
    `bf16`, `float32`, `int32`..., and pointers `*fp32` (`*k...` for a const pointee)."""
    name = _unwrap(name)
    if name.startswith("*"):
        const = name.startswith("*k")
        return pointer_type(str_to_ty(name[2 if const else 1:]), const=const)
    found = _BY_NAME.get(_SPELLINGS.get(name, name))
    if found is None:
        raise ValueError(f"unknown type string {name!r}")
    return found


_BY_NP = {d.np: d for d in ALL_DTYPES if d not in ML_DTYPES}


def from_numpy(np_dtype):
    """The Triton element type of a NumPy dtype (bool -> int1, bfloat16 via ml_dtypes)."""
    np_dtype = np.dtype(np_dtype)
    found = _BY_NP.get(np_dtype)
    if found is None and "ml_dtypes" in sys.modules:  # an ml_dtypes array exists: it is loaded
        _BY_NP.update((d.np, d) for d in ML_DTYPES)
        found = _BY_NP.get(np_dtype)
    if found is None:
        raise TypeError(f"minitriton has no Triton type for NumPy dtype {np_dtype}")
    return found


class const:
    """`in_ptr: tl.const`: the annotation of a pointer argument to constant data (Triton's
    `tl.const`): the kernel gets a const pointer (`pointer_type(..., const=True)`), which it may
    read but not store to or update atomically ("Cannot store to a constant pointer")."""


class constexpr_type:
    """The type of a compile-time constant (Triton's `constexpr_type`): `c.type` of a constexpr,
    and of the Python values a kernel sees for constexpr arguments and literals; equal when the
    values are."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"constexpr_type[{self.value}]"


class constexpr:
    """A compile-time constant. Used as an annotation (`BLOCK: tl.constexpr`) and as a value.

    Launch arguments for constexpr parameters reach the kernel as plain Python values, which
    behave exactly like constexprs; this wrapper exists for code that builds one explicitly.
    """

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return self.value.__index__()

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __hash__(self):
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    @property
    def type(self):
        return constexpr_type(self.value)

    def __getattr__(self, name):
        if name == "value":
            raise AttributeError(name)
        return getattr(self.value, name)


def _constexpr_op(name):
    def forward(self, *others):
        others = [_unwrap(o) for o in others]
        result = getattr(self.value, name)(*others)
        if result is NotImplemented:
            return NotImplemented
        return constexpr(result)
    return forward


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift"):
    setattr(constexpr, f"__{_name}__", _constexpr_op(f"__{_name}__"))
    setattr(constexpr, f"__r{_name}__", _constexpr_op(f"__r{_name}__"))
for _name in ("neg", "pos", "invert", "abs", "eq", "ne", "lt", "le", "gt", "ge"):
    setattr(constexpr, f"__{_name}__", _constexpr_op(f"__{_name}__"))


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


def literal_type(x):
    """The Triton type a Python literal gets (`to_tensor_type`)."""
    if isinstance(x, (bool, np.bool_)):
        return int1
    if isinstance(x, numbers.Integral):
        x = int(x)
        if -2**31 <= x < 2**31:
            return int32
        if 2**31 <= x < 2**32:
            return uint32
        if -2**63 <= x < 2**63:
            return int64
        if 2**63 <= x < 2**64:
            return uint64
        raise CompilationError(f"Nonrepresentable integer {x}.")
    if isinstance(x, numbers.Real):
        x = float(x)
        a = abs(x)
        if a == float("inf") or a == 0.0 or x != x or 2**-126 <= a <= (2 - 2**-23) * 2**127:
            return float32
        return float64
    raise CompilationError(f"cannot convert {x!r} of type {type(x).__name__} to tensor")


def integer_promote(a, b):
    if a.int_signedness == b.int_signedness:
        return a if a.int_bitwidth > b.int_bitwidth else b
    if a.is_int_unsigned():
        return a if a.int_bitwidth >= b.int_bitwidth else b
    return b if b.int_bitwidth >= a.int_bitwidth else a


_COMPUTATION_TYPES = {}  # (a, a_is_literal, b, b_is_literal, div_or_mod) -> type


def computation_type(a, a_is_literal, b, b_is_literal, div_or_mod):
    """Result type of an arithmetic op, as `computation_type_impl` in Triton (remembered per
    combination: every operator of every kernel asks)."""
    key = (a, a_is_literal, b, b_is_literal, div_or_mod)
    found = _COMPUTATION_TYPES.get(key)
    if found is None:
        found = _COMPUTATION_TYPES[key] = _computation_type(*key)
    return found


def _computation_type(a, a_is_literal, b, b_is_literal, div_or_mod):
    if a_is_literal != b_is_literal:
        lit, ten = (a, b) if a_is_literal else (b, a)
        if lit.kind() <= ten.kind():
            a = b = ten
    if a.is_fp64() or b.is_fp64():
        return float64
    if div_or_mod and (a.is_floating() or b.is_floating()):
        return float32
    if a.is_fp32() or b.is_fp32():
        return float32
    if a.is_fp16() or b.is_fp16():
        return float16
    if a.is_bf16() and b.is_bf16():
        return bfloat16
    if a.is_bf16() or b.is_bf16():
        return float32
    if a.is_fp8() and b.is_fp8():
        return a if a == b else float16
    if not a.is_int() or not b.is_int():
        raise CompilationError(f"unexpected type {a} and {b}")
    if div_or_mod and a.int_signedness != b.int_signedness:
        raise CompilationError(
            f"Cannot use /, //, or % with {a!r} and {b!r} because they have different signedness;"
            " this is unlikely to result in a useful answer. Cast them to the same signedness.")
    return integer_promote(a, b)
