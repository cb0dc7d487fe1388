"""Gluon's layouts (Triton 3.6's `triton/experimental/gluon/language/_layouts.py`): where the
elements of a block live on the GPU, in registers or in shared memory.

In minitriton a layout is a value that is checked when it is built, as Triton's constructors
check it, and carried by what names it, but it changes no number: the simulator holds every block
whole, so where a GPU would put an element changes nothing that a kernel computes.

Distributed layouts (a tensor in the registers of threads, warps and CTAs; `DistributedLayout`):
AutoLayout, CoalescedLayout, BlockedLayout, SliceLayout, DistributedLinearLayout,
DotOperandLayout, NVMMADistributedLayout. Shared-memory layouts (`SharedLayout`):
NVMMASharedLayout (with `get_default_for`), SwizzledSharedLayout, PaddedSharedLayout (with
`with_identity_for`), SharedLinearLayout.

As Triton's, they are frozen dataclasses with its fields, defaults, reprs, equality, hashes and
`mangle()`, and they raise AssertionError where its `__post_init__` asserts; `get_default_for`
takes minitriton's dtypes. Left out: `_to_ir`, and with it the checks that Triton's C++ makes
when a kernel's IR is built from a layout; and the module's helpers `bases_per_dim` and
`warps_per_cta`, which nothing in Triton 3.6 calls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List

from minitriton import types as _t


def _unwrap_if_constexpr(o):
    """Triton's `_unwrap_if_constexpr`: the values of constexprs, also inside lists and tuples
    (a kernel's `[1, BLOCK // 32]` holds constexprs)."""
    if isinstance(o, list):
        return [_unwrap_if_constexpr(x) for x in o]
    if isinstance(o, tuple):
        return tuple(_unwrap_if_constexpr(x) for x in o)
    return _t._unwrap(o)


def _unwrap_shape(shape):
    """Triton's `_unwrap_shape`: a list (also of a tuple) of the unwrapped entries."""
    return [_unwrap_if_constexpr(s) for s in _unwrap_if_constexpr(shape)]


def _unwrap_fields(layout, names, unwrap=_unwrap_if_constexpr):
    for name in names:
        object.__setattr__(layout, name, unwrap(getattr(layout, name)))


def _check(ok, message):
    # Triton checks with `assert`: the same error here, but not skipped under `python -O`
    if not ok:
        raise AssertionError(message)


def _check_bases(owner, name, bases, rank):
    for basis in bases:
        _check(len(basis) == rank, f"{owner} {name}: basis {basis} has {len(basis)} entries, "
                                   f"expected one per dimension ({rank})")


def _is_power_of_2(n):
    return n > 0 and n & (n - 1) == 0


def _join(values):
    return "_".join(map(str, values))


def _mangle_cga(cga_layout):
    return "_".join("~".join(map(str, vec)) for vec in cga_layout) if cga_layout else ""


def _cga_key(cga_layout):
    return tuple(tuple(vec) for vec in cga_layout)


class DistributedLayout:
    """A layout of a tensor in registers, across the threads, warps and CTAs of a program."""

    @property
    def type(self):
        return _t.constexpr_type(self)

    @property
    def rank(self):
        raise NotImplementedError("DistributedLayout subclasses must define rank")


@dataclass(frozen=True)
class AutoLayout(DistributedLayout):
    """No layout chosen: the compiler picks one from the tensor's uses."""

    def mangle(self):
        return "AL"

    @property
    def rank(self):
        raise ValueError("AutoLayout has no rank")


@dataclass(frozen=True)
class CoalescedLayout(DistributedLayout):
    """The layout the compiler picks to coalesce the tensor's global memory accesses."""

    def mangle(self):
        return "CL"

    @property
    def rank(self):
        raise ValueError("CoalescedLayout has no rank")


@dataclass(frozen=True)
class BlockedLayout(DistributedLayout):
    """A tensor tiled by `size_per_thread` elements per thread, `threads_per_warp` threads per
    warp and `warps_per_cta` warps, dimensions taken fastest first in `order`; `cga_layout` holds
    the bases of the CTAs of a cluster."""
    size_per_thread: List[int]
    threads_per_warp: List[int]
    warps_per_cta: List[int]
    order: List[int]
    cga_layout: List[List[int]] = field(default_factory=list)

    def __post_init__(self):
        # cga_layout too, here and below, where Triton keeps it as given (a constexpr there
        # would fail only in its C++ IR builder, which minitriton has not)
        _unwrap_fields(self, ("size_per_thread", "threads_per_warp", "warps_per_cta", "order",
                              "cga_layout"))
        rank = len(self.size_per_thread)
        for name in ("threads_per_warp", "warps_per_cta", "order"):
            value = getattr(self, name)
            _check(len(value) == rank, f"BlockedLayout: {name} {value} has {len(value)} entries "
                                       f"but size_per_thread {self.size_per_thread} has {rank}")

    def mangle(self) -> str:
        return (f"B{_join(self.size_per_thread)}_{_join(self.threads_per_warp)}_"
                f"{_join(self.warps_per_cta)}_{_join(self.order)}_{_mangle_cga(self.cga_layout)}B")

    def __hash__(self):
        return hash((tuple(self.size_per_thread), tuple(self.threads_per_warp),
                     tuple(self.warps_per_cta), tuple(self.order), _cga_key(self.cga_layout)))

    @property
    def rank(self):
        return len(self.order)


@dataclass(frozen=True)
class SliceLayout(DistributedLayout):
    """`parent` with dimension `dim` removed: the layout of a reduction along `dim` of a tensor
    laid out as `parent`, and of what `expand_dims` along `dim` takes."""
    dim: int
    parent: DistributedLayout

    def __post_init__(self):
        _unwrap_fields(self, ("dim", "parent"))

    def mangle(self) -> str:
        return f"SL{self.dim}_{self.parent.mangle()}SL"

    def __hash__(self):
        return hash((self.dim, self.parent))

    @property
    def rank(self):
        return self.parent.rank - 1

    @property
    def cga_layout(self):
        parent_cga_layout = self.parent.cga_layout
        if not parent_cga_layout:
            return []
        rank = self.parent.rank
        _check(0 <= self.dim < rank,
               f"SliceLayout: dim {self.dim} is not a dimension of its rank-{rank} parent")
        return [basis[:self.dim] + basis[self.dim + 1:] for basis in parent_cga_layout]


@dataclass(frozen=True)
class DistributedLinearLayout(DistributedLayout):
    """A linear layout (https://arxiv.org/abs/2505.23819) of a tensor of `shape`: each bit of
    the register, lane, warp and block index adds its basis to the element's coordinates."""
    reg_bases: List[List[int]]
    lane_bases: List[List[int]]
    warp_bases: List[List[int]]
    block_bases: List[List[int]]
    shape: List[int]

    def __post_init__(self):
        _unwrap_fields(self, ("reg_bases", "lane_bases", "warp_bases", "block_bases", "shape"),
                       _unwrap_shape)
        for name in ("reg_bases", "lane_bases", "warp_bases", "block_bases"):
            _check_bases("DistributedLinearLayout", name, getattr(self, name), len(self.shape))

    def mangle(self):
        return (f"DLL{self.reg_bases}_{self.lane_bases}_{self.warp_bases}_{self.block_bases}_"
                f"{self.shape}DLL")

    def __hash__(self):
        return hash((tuple(map(tuple, self.reg_bases)), tuple(map(tuple, self.lane_bases)),
                     tuple(map(tuple, self.warp_bases)), tuple(map(tuple, self.block_bases)),
                     tuple(self.shape)))

    @property
    def rank(self):
        return len(self.shape)


@dataclass(frozen=True)
class DotOperandLayout(DistributedLayout):
    """The layout of operand `operand_index` (0: left, 1: right) of a dot whose result is laid
    out as `parent` (an MMA layout); `k_width` elements along K per 32 bits."""
    operand_index: int
    parent: DistributedLayout
    k_width: int

    def __post_init__(self):
        _unwrap_fields(self, ("operand_index", "parent", "k_width"))

    def mangle(self) -> str:
        return f"DO{self.operand_index}_{self.parent.mangle()}_{self.k_width}DO"

    def __hash__(self):
        return hash((self.operand_index, self.parent, self.k_width))

    @property
    def rank(self):
        return self.parent.rank

    @property
    def cga_layout(self):
        parent_cga_layout = _unwrap_if_constexpr(getattr(self.parent, "cga_layout", [])) or []
        if not parent_cga_layout:
            return []
        rank = self.parent.rank
        _check(all(len(basis) == rank for basis in parent_cga_layout),
               f"DotOperandLayout: the parent's cga_layout {parent_cga_layout} has bases that are "
               f"not of its rank {rank}")
        # the CTAs of a cluster share an operand along K: its bases there are 0
        k_dim = rank - 1 if self.operand_index == 0 else rank - 2
        _check(0 <= k_dim < rank, f"DotOperandLayout: a rank-{rank} parent has no K dimension")
        derived = []
        for basis in parent_cga_layout:
            new_basis = list(basis)
            new_basis[k_dim] = 0
            derived.append(new_basis)
        return derived


@dataclass(frozen=True)
class NVMMADistributedLayout(DistributedLayout):
    """The result layout of NVIDIA's tensor-core instructions (`version` [2, 0] is mma.sync,
    [3, 0] Hopper's wgmma) of `instr_shape`, with `warps_per_cta` warps."""
    version: List[int]
    warps_per_cta: List[int]
    instr_shape: List[int]
    cga_layout: List[List[int]] = field(default_factory=list)

    def __post_init__(self):
        _unwrap_fields(self, ("version", "warps_per_cta", "instr_shape", "cga_layout"))

    def mangle(self) -> str:
        return (f"MMA_{self.version}_{self.warps_per_cta}_{self.instr_shape}_"
                f"{_mangle_cga(self.cga_layout)}_MMA")

    def __hash__(self):
        return hash((tuple(self.version), tuple(self.warps_per_cta), tuple(self.instr_shape),
                     _cga_key(self.cga_layout)))

    @property
    def rank(self):
        return len(self.warps_per_cta)


class SharedLayout:
    """A layout of a buffer in shared memory."""

    @property
    def type(self):
        return _t.constexpr_type(self)


def _get_shape_per_cta(shape, cga_layout):
    """The part of a block of `shape` that one CTA of the cluster `cga_layout` holds."""
    if not cga_layout:
        return shape
    shape_per_cta = list(shape)
    rank = len(cga_layout[0])
    cga_shape = [1] * rank
    for basis in cga_layout:
        _check(len(basis) == rank, f"cga_layout {cga_layout}: bases of different lengths")
        for i in range(rank):
            cga_shape[i] = max(cga_shape[i], basis[i])
    # each dimension's CTA count is its largest basis (a stride) times 2
    for i in range(rank):
        cga_shape[i] *= 2
    for dim in range(rank):
        _check(shape_per_cta[dim] % cga_shape[dim] == 0,
               f"Shape {shape} is not divisible by CGA layout {cga_layout}")
        shape_per_cta[dim] //= cga_shape[dim]
    return shape_per_cta


@dataclass(frozen=True)
class NVMMASharedLayout(SharedLayout):
    """A shared-memory layout that NVIDIA's TMA and tensor cores read: rows swizzled over
    `swizzle_byte_width` bytes (0: none) of `element_bitwidth`-bit elements, `transposed` for
    a K-major operand, `fp4_padded` for fp4 held one to a byte."""
    swizzle_byte_width: int
    element_bitwidth: int
    rank: int = 2
    transposed: bool = False
    fp4_padded: bool = False
    cga_layout: List[List[int]] = field(default_factory=list)

    def __post_init__(self):
        _unwrap_fields(self, ("swizzle_byte_width", "element_bitwidth", "rank", "transposed",
                              "fp4_padded", "cga_layout"))
        # get_default_for passes None where there is no cluster
        object.__setattr__(self, "cga_layout", self.cga_layout or [])
        if self.cga_layout:
            _check(len(self.cga_layout[0]) == self.rank,
                   f"NVMMASharedLayout: cga_layout bases have {len(self.cga_layout[0])} entries "
                   f"but rank is {self.rank}")
        _check(self.element_bitwidth in [8, 16, 32, 64],
               f"NVMMASharedLayout: element_bitwidth must be 8, 16, 32 or 64, got "
               f"{self.element_bitwidth}")
        _check(self.swizzle_byte_width in [0, 32, 64, 128],
               f"NVMMASharedLayout: swizzle_byte_width must be 0, 32, 64 or 128, got "
               f"{self.swizzle_byte_width}")

    @staticmethod
    def get_default_for(block_shape, dtype, transposed=False, fp4_padded=False, cga_layout=None):
        """The NVMMASharedLayout for blocks of `block_shape` and `dtype` (a minitriton dtype) with
        the widest swizzle the shape allows, which takes the fewest TMA or MMA messages."""
        block_shape, dtype, transposed, fp4_padded, cga_layout = map(
            _unwrap_if_constexpr, (block_shape, dtype, transposed, fp4_padded, cga_layout))
        packing_factor = 2 if fp4_padded else 1
        shape_per_cta = block_shape if cga_layout is None else _get_shape_per_cta(block_shape,
                                                                                  cga_layout)
        rank = len(block_shape)
        if transposed:
            shape_per_cta = shape_per_cta[1:] + shape_per_cta[:1]
        contig_dim_bytes = shape_per_cta[-1] * packing_factor * dtype.primitive_bitwidth // 8
        swizzle_byte_width = next((width for width in (128, 64, 32)
                                   if contig_dim_bytes >= width and contig_dim_bytes % width == 0),
                                  0)
        # a swizzle pattern spans 8 rows
        if rank < 2 or math.prod(shape_per_cta[:-1]) < 8:
            swizzle_byte_width = 0
        return NVMMASharedLayout(swizzle_byte_width=swizzle_byte_width,
                                 element_bitwidth=dtype.primitive_bitwidth, rank=rank,
                                 transposed=transposed, fp4_padded=fp4_padded,
                                 cga_layout=cga_layout)

    def mangle(self) -> str:
        return (f"NVMMA_{self.swizzle_byte_width}_{self.element_bitwidth}_{self.transposed}_"
                f"{self.fp4_padded}_{_mangle_cga(self.cga_layout)}_NVMMA")

    def __hash__(self):
        return hash((self.swizzle_byte_width, self.element_bitwidth, self.rank, self.transposed,
                     self.fp4_padded, _cga_key(self.cga_layout) if self.cga_layout else None))


@dataclass(frozen=True)
class SwizzledSharedLayout(SharedLayout):
    """A shared-memory layout whose rows are XOR-swizzled in vectors of `vec` elements,
    `per_phase` rows per phase, `max_phase` phases, dimensions taken fastest first in `order`."""
    vec: int
    per_phase: int
    max_phase: int
    order: List[int]
    cga_layout: List[List[int]] = field(default_factory=list)

    def __post_init__(self):
        _unwrap_fields(self, ("vec", "per_phase", "max_phase", "order", "cga_layout"))

    def mangle(self) -> str:
        return (f"SSS_{self.vec}_{self.per_phase}_{self.max_phase}_{_join(self.order)}_"
                f"{_mangle_cga(self.cga_layout)}_SSS")

    def __hash__(self):
        return hash((self.vec, self.per_phase, self.max_phase, tuple(self.order),
                     _cga_key(self.cga_layout)))


@dataclass(frozen=True)
class PaddedSharedLayout(SharedLayout):
    """A shared-memory layout that inserts `padding` elements after every `interval` elements
    (for each [interval, padding] of `interval_padding_pairs`, summed where intervals meet), and
    maps the 1-D offset to the n-D element of `shape` by the linear `offset_bases` (and
    `block_bases` for the CTAs of a cluster). With `interval_padding_pairs` [[2, 1], [4, 2]] and
    the identity mapping, shared memory holds e0 e1 p0 e2 e3 p1 p2 p3 e4 e5 p4..."""
    interval_padding_pairs: List[List[int]]
    offset_bases: List[List[int]]
    block_bases: List[List[int]]
    shape: List[int]

    def __post_init__(self):
        _unwrap_fields(self, ("interval_padding_pairs", "offset_bases", "block_bases", "shape"),
                       _unwrap_shape)
        for name in ("offset_bases", "block_bases"):
            _check_bases("PaddedSharedLayout", name, getattr(self, name), len(self.shape))
        self.verify()

    def mangle(self) -> str:
        return (f"PaddedShared_{self.interval_padding_pairs}_{self.offset_bases}_"
                f"{self.block_bases}_{self.shape}_PaddedShared")

    def verify(self):
        pairs = self.interval_padding_pairs
        _check(len(pairs) > 0, "PaddedSharedLayout interval_padding_pairs must have at least one "
                               "interval-padding pair")
        _check(all(len(pair) == 2 for pair in pairs),
               f"PaddedSharedLayout interval_padding_pairs must be [interval, padding] pairs, "
               f"got {pairs}")
        intervals, paddings = zip(*pairs)
        _check(len(set(intervals)) == len(intervals),
               f"PaddedSharedLayout intervals must differ, got {list(intervals)}")
        _check(all(_is_power_of_2(n) for n in intervals),
               f"PaddedSharedLayout interval values must all be power of two, got "
               f"{list(intervals)}")
        _check(all(_is_power_of_2(n) for n in paddings),
               f"PaddedSharedLayout padding values must all be power of two, got {list(paddings)}")
        _check(len(self.shape) > 0, "PaddedSharedLayout shape must not be empty")

    @staticmethod
    def with_identity_for(interval_padding_pairs, shape, order):
        """The PaddedSharedLayout of `interval_padding_pairs` whose offsets walk `shape` in
        `order` (fastest dimension first) with nothing permuted."""
        interval_padding_pairs, shape, order = map(_unwrap_if_constexpr,
                                                   (interval_padding_pairs, shape, order))
        _check(len(shape) == len(order),
               f"PaddedSharedLayout.with_identity_for: order {order} does not match shape {shape}")
        _check(all(_is_power_of_2(n) for n in shape),
               f"PaddedSharedLayout.with_identity_for: shape {shape} must be powers of two")
        rank = len(shape)
        offset_bases = []
        for dim in order:
            for basis in range(int(math.log2(shape[dim]))):
                offset_bases.append([1 << basis if i == dim else 0 for i in range(rank)])
        return PaddedSharedLayout(interval_padding_pairs, offset_bases, [], shape)

    def __hash__(self):
        return hash((tuple(map(tuple, self.interval_padding_pairs)),
                     tuple(map(tuple, self.offset_bases)), tuple(map(tuple, self.block_bases)),
                     tuple(self.shape)))


@dataclass(frozen=True)
class SharedLinearLayout(SharedLayout):
    """A shared-memory layout given as a linear layout: each bit of the offset (and of the CTA's
    index in its cluster) adds its basis to the element's coordinates; `alignment` in bytes."""
    offset_bases: List[List[int]]
    block_bases: List[List[int]] = field(default_factory=list)
    alignment: int = 16

    def __post_init__(self):
        _unwrap_fields(self, ("offset_bases", "block_bases"), _unwrap_shape)
        _unwrap_fields(self, ("alignment",))
        _check(len(self.offset_bases) != 0, "SharedLinearLayout offset_bases must not be empty")
        rank = len(self.offset_bases[0])
        _check(rank > 0, "SharedLinearLayout offset_bases must not be empty lists (rank 0)")
        for name in ("offset_bases", "block_bases"):
            _check_bases("SharedLinearLayout", name, getattr(self, name), rank)
        _check(_is_power_of_2(self.alignment),
               f"SharedLinearLayout alignment must be a positive power of two, got "
               f"{self.alignment}")

    def mangle(self) -> str:
        return f"SharedLinear_{self.offset_bases}_{self.block_bases}_{self.alignment}_SharedLinear"

    def __hash__(self):
        return hash((tuple(map(tuple, self.offset_bases)), tuple(map(tuple, self.block_bases)),
                     self.alignment))
