"""Scans and permutations: associative_scan, sort, topk, flip, interleave, histogram, gather.

`associative_scan` calls the user's @jit combine function on blocks of the GPU's threads in the
GPU's order (each thread's elements, then the lanes by Hillis-Steele, then the chunks of warps:
language/reduce.py `scan_in_gpu_order`), so a float or a non-associative combine gives the
GPU's bits where the block has Triton's default layout (docs/numerics.md). `sort`/`topk` run
the bitonic network of Triton's standard library
(python/triton/language/standard.py: the block as a hypercube of 2s, compare-and-swap by
`where((x > y) != (flip ^ is_right), y, x)`), so ties, -0.0/+0.0 and NaN come out as on the GPU.
"""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..context import Divergence
from ..errors import CompilationError, OutOfBoundsError
from ..types import _unwrap
from .core import (broadcast_shapes, expand_to_rank, tensor, tensor_member, to_tensor,
                   validate_block_shape)
from .reduce import _user_combine, max as _max, min as _min, scan_in_gpu_order
from .shape import join, reshape


def _lanes(*arrays):
    return max(a.shape[0] for a in arrays)


def _wrap_axis(axis, rank, what):
    axis = _unwrap(axis)
    if not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
        raise CompilationError(f"{what} axis {axis} must be < inputs rank ({rank})")
    return int(axis) % rank


@tensor_member
def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan of one tensor or a tuple of tensors with `combine_fn(*lhs, *rhs)`, in the
    GPU's order (language/reduce.py `scan_in_gpu_order`)."""
    single = not isinstance(input, tuple)
    xs = [to_tensor(_unwrap(v)) for v in ((input,) if single else input)]
    shape = xs[0].shape
    if any(x.shape != shape for x in xs):
        raise CompilationError("all scan inputs must have the same shape")
    if not shape:
        raise CompilationError("associative_scan needs a block, got a scalar")
    ax = _wrap_axis(axis, len(shape), "scan")
    lanes = _lanes(*(x.data for x in xs))
    data = [np.broadcast_to(x.data, (lanes, *shape)) for x in xs]
    dtypes = [x.dtype for x in xs]
    out = scan_in_gpu_order(data, shape, ax, xs[0].dtype.primitive_bitwidth,
                            _user_combine(combine_fn, dtypes, "scan"), bool(_unwrap(reverse)))
    result = tuple(tensor(np.ascontiguousarray(a), t, shape) for a, t in zip(out, dtypes))
    return result[0] if single else result


def _log2(n):
    return int(n).bit_length() - 1


def _indicator(n_dims, j):
    """[0, 1] along hypercube dimension n_dims - 1 - j (the j-th innermost), ones elsewhere."""
    return np.arange(2).reshape((1,) + (1,) * (n_dims - j - 1) + (2,) + (1,) * j)


def _compare_and_swap(h, flip, i, n_dims):
    # the partner of each element along the i-th innermost dimension
    axis = n_dims - i
    y = np.flip(h, axis)
    is_right = _indicator(n_dims, i)
    return np.where((h > y) != (flip ^ is_right), y, h)


def _bitonic_merge_hypercube(h, stage, order, n_dims):
    """order 0: ascending, 1: descending, 2: alternating with period 2**stage."""
    flip = _indicator(n_dims, stage) if order == 2 else order
    for i in range(stage):
        h = _compare_and_swap(h, flip, stage - 1 - i, n_dims)
    return h


def _sort_impl(x, k=None, dim=None, descending=False):
    x = to_tensor(_unwrap(x))
    dim, k, descending = _unwrap(dim), _unwrap(k), int(bool(_unwrap(descending)))
    rank = len(x.shape)
    if rank == 0:
        raise CompilationError("sort needs a block, got a scalar")
    if (rank - 1 if dim is None else dim) != rank - 1:
        raise CompilationError("only minor dimension is currently supported")
    log_n = _log2(x.shape[-1])
    log_k = log_n if k is None else _log2(validate_block_shape([k])[0])
    if log_k > log_n:
        raise CompilationError(f"topk: k ({k}) is larger than the dimension ({x.shape[-1]})")
    n_dims = _log2(x.numel)
    h = x.data.reshape((x.data.shape[0],) + (2,) * n_dims)
    for i in range(1, log_k + 1):
        h = _bitonic_merge_hypercube(h, i, 2 if i < log_n else descending, n_dims)
    dtype = x.dtype
    # bitonic top-k: keep the better half of each 2**(log_k + 1) run, re-merge, repeat
    for i in range(log_k + 1, log_n + 1):
        cube = tensor(h, dtype, list(h.shape[1:]))
        cube = (_max if descending else _min)(cube, n_dims - 1 - log_k)
        h, dtype, n_dims = cube.data, cube.dtype, n_dims - 1  # narrow types widen, as in Triton
        h = _bitonic_merge_hypercube(h, log_k, 2 if i < log_n else descending, n_dims)
    shape = x.shape[:-1] + [2 ** log_k]
    return tensor(np.ascontiguousarray(h).reshape((h.shape[0], *shape)), dtype, shape)


@tensor_member
def sort(x, dim=None, descending=False):
    """Sort along the last dimension (the only one Triton supports)."""
    return _sort_impl(x, dim=dim, descending=descending)


def topk(x, k, dim=None, descending=True):
    """The k largest (smallest if not descending) along the last dimension, in order."""
    return _sort_impl(x, k=k, dim=dim, descending=descending)


@tensor_member
def flip(x, dim=None):
    """Reverse the order along `dim` (the last one if None); the bits move unchanged."""
    x = to_tensor(_unwrap(x))
    rank = len(x.shape)
    dim = _unwrap(dim)
    dim = rank - 1 if dim is None else dim
    if rank == 0 or not isinstance(dim, (int, np.integer)) or not -rank <= dim < rank:
        raise CompilationError(f"flip: invalid dim {dim} for a tensor of shape {x.shape}")
    return tensor(np.ascontiguousarray(np.flip(x.data, int(dim) % rank + 1)), x.dtype, x.shape)


def interleave(a, b):
    """a[..., 0], b[..., 0], a[..., 1], b[..., 1], ...: join(a, b) with its last two dims merged."""
    c = join(a, b)
    if len(c.shape) == 1:
        return c
    return reshape(c, c.shape[:-2] + [2 * c.shape[-2]])


@tensor_member
def histogram(input, num_bins, mask=None):
    """int32 counts of the values 0 .. num_bins - 1 in a 1-D integer block (bins of width 1).

    Values outside [0, num_bins) and lanes where `mask` is False count nowhere."""
    x = to_tensor(_unwrap(input))
    num_bins = validate_block_shape([_unwrap(num_bins)])[0]
    if len(x.shape) != 1:
        raise CompilationError("histogram only supports 1D input")
    if not x.dtype.is_int():
        raise CompilationError("histogram only supports integer input")
    lanes = x.data.shape[0]
    keep = np.ones(x.data.shape, bool)
    mask = _unwrap(mask)
    if mask is not None:
        mask = to_tensor(mask)
        if not mask.dtype.is_bool():
            raise CompilationError("Mask must have boolean scalar type")
        lanes = _lanes(x.data, mask.data)
        keep = np.broadcast_to(mask.data.reshape((mask.data.shape[0],) + (1,) * (1 - len(mask.shape))
                                                 + tuple(mask.shape)), (lanes, *x.shape))
    values = np.broadcast_to(x.data, (lanes, *x.shape)).astype(np.int64)
    keep = keep & (values >= 0) & (values < num_bins)
    rows = np.broadcast_to(np.arange(lanes)[:, None], values.shape)
    counts = np.zeros((lanes, num_bins), np.int32)
    np.add.at(counts, (rows[keep], values[keep]), 1)
    return tensor(counts, _t.int32, [num_bins])


@tensor_member
def gather(src, index, axis):
    """out[i][j] = src[index[i][j]][j] (axis 0): the result has the index's shape."""
    src, index = to_tensor(_unwrap(src)), to_tensor(_unwrap(index))
    if not index.dtype.is_int():
        raise CompilationError("index must be an integer tensor")
    rank = len(src.shape)
    if len(index.shape) != rank:
        raise CompilationError("source and index tensors must have the same rank")
    ax = _wrap_axis(axis, rank, "gather")
    for d in range(rank):
        if d != ax and index.shape[d] != src.shape[d]:
            raise CompilationError(f"index dim {ax} must match the corresponding source dim")
    idx = index.data.astype(np.int64)
    bad = (idx < 0) | (idx >= src.shape[ax])
    if bad.any():
        raise OutOfBoundsError(f"tl.gather: index {int(idx[bad][0])} is out of range for axis "
                               f"{ax} of size {src.shape[ax]} (the GPU gives unspecified values)")
    lanes = _lanes(src.data, idx)
    out = np.take_along_axis(np.broadcast_to(src.data, (lanes, *src.shape)),
                             np.broadcast_to(idx, (lanes, *index.shape)), ax + 1)
    return tensor(out, src.dtype, index.shape)


def map_elementwise(scalar_fn, *args, pack=1):
    """`scalar_fn` (a @jit function of scalars) applied to each element of the broadcast `args`
    (Triton's tl.map_elementwise): one result tensor, or a tuple. Python control flow in it may
    differ from element to element, as on the GPU: the elements run together as the lanes of
    scalars, and where a condition splits them each side runs on its own lanes. With pack=p it
    takes p consecutive elements of each argument (along the last dimension) per call, and
    returns p per result: (arg0[0..p), arg1[0..p), ...) in, (out0[0..p), out1[0..p), ...) out."""
    pack = _unwrap(pack)
    ts = [to_tensor(_unwrap(a)) for a in args]
    if not ts:
        raise CompilationError("map_elementwise needs at least one tensor argument")
    if not isinstance(pack, int) or pack < 1:
        raise CompilationError(f"map_elementwise: pack must be an int >= 1, got {pack!r}")
    shape = []
    for t in ts:
        shape = broadcast_shapes(shape, t.shape)
    lanes = max(t.data.shape[0] for t in ts)
    n = int(np.prod(shape, dtype=np.int64))
    if n % pack or (shape and shape[-1] % pack):
        raise CompilationError(f"map_elementwise: pack={pack} does not divide the last "
                               f"dimension of the block shape {shape}")
    groups = lanes * n // pack
    flat = [np.broadcast_to(expand_to_rank(t, len(shape)), (lanes, *shape)).reshape(groups, pack)
            for t in ts]
    scalars = [tensor(np.ascontiguousarray(f[:, j]), t.dtype, [])
               for f, t in zip(flat, ts) for j in range(pack)]
    dtypes, columns = _map_lanes(scalar_fn, scalars, groups)
    if len(columns) % pack:
        raise CompilationError(f"map_elementwise: the function returned {len(columns)} values, "
                               f"not a multiple of pack={pack}")
    outs = []
    for k in range(len(columns) // pack):
        kinds = dtypes[k * pack:(k + 1) * pack]
        if any(d != kinds[0] for d in kinds):
            raise CompilationError("type mismatch in unpacked results of map_elementwise")
        data = np.stack(columns[k * pack:(k + 1) * pack], axis=1).reshape(lanes, *shape)
        outs.append(tensor(data, kinds[0], list(shape)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _map_lanes(fn, scalars, count):
    """(result dtypes, result arrays of `count` lanes) of `fn` on scalar tensors whose lanes are
    the elements; a Divergence (elements disagreeing on a Python condition) splits the lanes by
    their decision and runs each part again."""
    try:
        out = fn(*scalars)
    except Divergence as d:
        decisions = np.asarray(d.decisions)
        if decisions.shape != (count,):  # the programs', not the elements': the launch's to split
            raise
        dtypes, columns = None, None
        for value in np.unique(decisions):
            idx = np.nonzero(decisions == value)[0]
            part = [tensor(s.data[idx] if s.data.shape[0] > 1 else s.data, s.dtype, [])
                    for s in scalars]
            kinds, cols = _map_lanes(fn, part, idx.size)
            if dtypes is None:
                dtypes = kinds
                columns = [np.empty(count, c.dtype) for c in cols]
            elif kinds != dtypes:
                raise CompilationError(f"map_elementwise: the function's branches return "
                                       f"different types ({dtypes} and {kinds})")
            for column, c in zip(columns, cols):
                column[idx] = c
        return dtypes, columns
    out = out if isinstance(out, tuple) else (out,)
    out = [to_tensor(_unwrap(o)) for o in out]
    for o in out:
        if o.shape:
            raise CompilationError(f"map_elementwise: the function must return scalars, got a "
                                   f"block of shape {o.shape}")
    return [o.dtype for o in out], [np.broadcast_to(o.data, (count,)).copy() for o in out]
