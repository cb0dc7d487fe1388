"""Shape manipulation: trans/permute, reshape/view, expand_dims, broadcast_to, join/split."""
from __future__ import annotations

import math

import numpy as np

from ..errors import CompilationError
from ..settings import triton_release
from ..types import _unwrap
from .core import (broadcast_shapes, broadcast_to as _broadcast_to, tensor, tensor_member,
                   to_tensor, validate_block_shape)
from .glayouts import expanded_glayout
from .marks import reshaping


def _dims(args):
    args = [_unwrap(a) for a in args]
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = list(args[0])
    return [int(_unwrap(a)) for a in args]


@tensor_member
@reshaping
def permute(input, *dims):
    x = to_tensor(_unwrap(input))
    dims = _dims(dims)
    if sorted(dims) != list(range(len(x.shape))):
        raise CompilationError(f"permute dims must be a permutation of 0, 1, ..., n-1, but were "
                               f"{dims}")
    data = np.transpose(x.data, [0] + [d + 1 for d in dims])
    return tensor(data, x.dtype, [x.shape[d] for d in dims], x.origin)


@tensor_member
def trans(input, *dims):
    x = to_tensor(_unwrap(input))
    dims = _dims(dims)
    if not dims:  # Triton 3.6: the last two axes swapped (a batched 2-D transpose)
        n = len(x.shape)
        if n < 2:
            raise CompilationError("tl.trans invoked with a 0- or 1-dimensional tensor")
        dims = list(range(n - 2)) + [n - 1, n - 2]
    return permute(x, dims)


@tensor_member
@reshaping
def reshape(input, *shape, can_reorder=False):
    x = to_tensor(_unwrap(input))
    shape = validate_block_shape(_dims(shape)) if _dims(shape) else []
    if math.prod(shape) != x.numel:
        raise CompilationError("reshape() cannot change total number of elements in tensor")
    return tensor(x.data.reshape((x.data.shape[0], *shape)), x.dtype, shape, x.origin)


@tensor_member
def squeeze(x, dim):
    """`x` without its length-1 dimension `dim` (Triton 3.9's tl.squeeze)."""
    x = to_tensor(_unwrap(x))
    dim, rank = int(_unwrap(dim)), len(x.shape)
    if not -rank <= dim < rank:
        raise CompilationError(f"squeeze: dim {dim} is out of range for a tensor of rank {rank}")
    dim %= rank
    if x.shape[dim] != 1:
        raise CompilationError(f"squeeze: dimension {dim} of shape {x.shape} is not 1")
    return reshape(x, x.shape[:dim] + x.shape[dim + 1:])


@tensor_member
def unsqueeze(x, dim):
    """`x` with a length-1 dimension inserted at `dim` (Triton 3.9's tl.unsqueeze)."""
    x = to_tensor(_unwrap(x))
    dim, rank = int(_unwrap(dim)), len(x.shape) + 1
    if not -rank <= dim < rank:
        raise CompilationError(f"unsqueeze: dim {dim} is out of range for a result of rank "
                               f"{rank}")
    dim %= rank
    return reshape(x, x.shape[:dim] + [1] + x.shape[dim:])


@tensor_member
def view(input, *shape):
    return reshape(input, *shape)


@tensor_member
def ravel(x, can_reorder=False):
    """`x.ravel()`: x as one dimension, in C order (Triton's tl.ravel)."""
    x = to_tensor(_unwrap(x))
    return reshape(x, [x.numel], can_reorder=can_reorder)


@tensor_member
@reshaping
def expand_dims(input, axis):
    x = to_tensor(_unwrap(input))
    axes = _unwrap(axis)
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    rank = len(x.shape) + len(axes)
    wrapped = []
    for a in (int(_unwrap(a)) for a in axes):
        if not -rank <= a < rank:
            raise CompilationError(f"invalid axis {a}. Expected {-rank} <= axis < {rank}")
        wrapped.append(a % rank)
    if len(set(wrapped)) != len(wrapped):
        raise CompilationError(f"expand_dims received duplicate axes, normalized axes = "
                               f"{wrapped}")
    new_shape = list(x.shape)
    for a in sorted(wrapped):
        new_shape.insert(a, 1)
    out = tensor(x.data.reshape((x.data.shape[0], *new_shape)), x.dtype, new_shape, x.origin)
    out.glayout = expanded_glayout(x.glayout, sorted(wrapped))
    return out


@tensor_member
@reshaping
def broadcast_to(input, *shape):
    x = to_tensor(_unwrap(input))
    shape = _dims(shape)
    if not x.shape:  # a scalar is splat, as Triton's broadcast_impl_shape does
        return _broadcast_to(x, validate_block_shape(shape) if shape else [])
    if len(shape) != len(x.shape):
        raise CompilationError(f"Cannot broadcast, rank mismatch: {x.shape}, {shape}")
    for i, (a, b) in enumerate(zip(x.shape, shape)):
        if a != b and a != 1:
            raise CompilationError(f"Cannot broadcast, the expanded size of the tensor ({b}) must "
                                   f"match the existing size ({a}) at non-singleton dimension {i}"
                                   f": {x.shape}, {shape}")
    return _broadcast_to(x, shape)


def broadcast(input, other):
    a, b = to_tensor(_unwrap(input)), to_tensor(_unwrap(other))
    shape = broadcast_shapes(a.shape, b.shape)
    return _broadcast_to(a, shape), _broadcast_to(b, shape)


@tensor_member
def join(a, b):
    a, b = broadcast(a, b)
    if a.dtype != b.dtype:
        raise CompilationError(f"join: types differ ({a.dtype}, {b.dtype})")
    lanes = max(a.data.shape[0], b.data.shape[0])
    da = np.broadcast_to(a.data, (lanes, *a.shape))
    db = np.broadcast_to(b.data, (lanes, *b.shape))
    return tensor(np.stack([da, db], axis=-1), a.dtype, a.shape + [2])


@tensor_member
@reshaping
def item(input):
    """A single-element block as a scalar (Triton's tl.item / x.item())."""
    x = to_tensor(_unwrap(input))
    if not x.shape:
        return x
    if x.numel != 1:
        raise CompilationError(f"can only unsplat single-element tensors (item() of a block of "
                               f"shape {x.shape})")
    return tensor(x.data.reshape(x.data.shape[0]), x.dtype, [])


def cat(input, other, can_reorder=False, dim=0):
    """Two blocks of one dtype end to end (Triton's tl.cat). Triton 3.6 implements only 1-D
    blocks with can_reorder=True, where the order of the result's elements is the compiler's to
    choose (this one keeps `input` then `other`, so only a kernel that reduces the result gives
    the GPU's answer); from 3.8 on `cat` keeps the order, takes blocks of any rank and a `dim`,
    and ignores can_reorder."""
    a, b = to_tensor(_unwrap(input)), to_tensor(_unwrap(other))
    dim = int(_unwrap(dim))
    if triton_release() < (3, 8):
        if not _unwrap(can_reorder):
            raise CompilationError("cat: the current implementation of `cat` always may "
                                   "reorder elements: pass can_reorder=True (Triton 3.6 asserts "
                                   "it)")
        if len(a.shape) != 1 or len(b.shape) != 1:
            raise CompilationError(f"cat: 1-D blocks only (got shapes {a.shape} and "
                                   f"{b.shape}); Triton 3.8 takes any rank")
    if a.dtype != b.dtype:
        raise CompilationError(f"cat: types differ ({a.dtype}, {b.dtype})")
    rank = len(a.shape)
    if len(b.shape) != rank or not -rank <= dim < rank:
        raise CompilationError(f"cat: shapes {a.shape} and {b.shape} along dim {dim}")
    dim %= rank
    if [n for i, n in enumerate(a.shape) if i != dim] != \
            [n for i, n in enumerate(b.shape) if i != dim]:
        raise CompilationError(f"cat: shapes {a.shape} and {b.shape} differ outside dim {dim}")
    shape = list(a.shape)
    shape[dim] += b.shape[dim]
    shape = validate_block_shape(shape)
    lanes = max(a.data.shape[0], b.data.shape[0])

    def ends(x, y):
        return np.concatenate([np.broadcast_to(x, (lanes, *a.shape)),
                               np.broadcast_to(y, (lanes, *b.shape))], axis=dim + 1)
    out = tensor(ends(a.data, b.data), a.dtype, shape, a.origin if a.origin == b.origin else None)
    if a.pad is not None or b.pad is not None:  # padding marks move with their lanes
        out.pad = ends(False if a.pad is None else a.pad, False if b.pad is None else b.pad)
    return out


@tensor_member
def split(a):
    a = to_tensor(_unwrap(a))
    if not a.shape or a.shape[-1] != 2:
        raise CompilationError("split requires the last dimension of the tensor to be 2")
    return _take(a, len(a.shape) - 1, 0), _take(a, len(a.shape) - 1, 1)


def _take(x, axis, i):
    shape = list(x.shape)
    del shape[axis]
    return tensor(np.take(x.data, i, axis=axis + 1), x.dtype, shape)


tensor_member(trans, name="T", as_property=True)
