"""Element-wise kernels (lecture §5): vector add, fused GeLU, fused SiLU, and the fused
backward of each activation.

One program handles BLOCK_SIZE consecutive elements; the last program masks the lanes past
the end. Each kernel reads its inputs once and writes its output once: everything in between
stays in registers (that is the point of fusion). The backward kernels are the same pattern:
dx = dy * f'(x) reads dy and x and writes dx, where torch's unfused backward would round-trip
f'(x) through memory. Every op is a custom operator with autograd (kernels/ops.py).
"""
from __future__ import annotations

import torch

from ..backend import DEVICE, tl, triton
from . import _native, ops
from ._checks import FLOAT_DTYPES, check_inputs, grid_1d
from ._launch import Bound, PlanCache

DEFAULT_BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)  # read n
    y = tl.load(y_ptr + offsets, mask=mask)  # read n
    tl.store(out_ptr + offsets, x + y, mask=mask)  # write n


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # GeLU, tanh form: 0.5 x (1 + tanh(a)) = x * sigmoid(2a), a = sqrt(2/pi) (x + 0.044715 x^3)
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # read n; math in fp32
    a = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x * tl.sigmoid(2.0 * a)
    tl.store(y_ptr + offsets, y, mask=mask)  # write n (cast back to the output's dtype)


@triton.jit
def silu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # read n
    tl.store(y_ptr + offsets, x * tl.sigmoid(x), mask=mask)  # write n


@triton.jit
def gelu_bwd_kernel(dy_ptr, x_ptr, dx_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # gelu = x * s, s = sigmoid(2a): gelu' = s + x * s * (1 - s) * 2a', a' = sqrt(2/pi) *
    # (1 + 3 * 0.044715 x^2); torch's formula, so that inf and NaN give what torch gives
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # read n
    dy = tl.load(dy_ptr + offsets, mask=mask).to(tl.float32)  # read n
    s = tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    grad = s + x * s * (1.0 - s) * 1.5957691216057308 * (1.0 + 0.134145 * x * x)
    tl.store(dx_ptr + offsets, dy * grad, mask=mask)  # write n


@triton.jit
def silu_bwd_kernel(dy_ptr, x_ptr, dx_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # silu' = s * (1 + x * (1 - s)), s = sigmoid(x)
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # read n
    dy = tl.load(dy_ptr + offsets, mask=mask).to(tl.float32)  # read n
    s = tl.sigmoid(x)
    tl.store(dx_ptr + offsets, dy * s * (1.0 + x * (1.0 - s)), mask=mask)  # write n


_BOUNDS = PlanCache()


def _bound(kernel, n, block_size, dtype):
    """The launch of `kernel` over n elements of dtype in blocks of block_size (one per
    signature: its later calls skip Triton's dispatch, and the native path describes it)."""
    return _BOUNDS.get((kernel, n, block_size, dtype), lambda: Bound(
        kernel, grid_1d(n, block_size), BLOCK_SIZE=block_size))


def _launch(kernel, inputs, block_size, shape=None):
    out = torch.empty(inputs[0].shape if shape is None else shape, dtype=inputs[0].dtype,
                      device=inputs[0].device)
    n = out.numel()
    if n:
        _bound(kernel, n, block_size, out.dtype)(*inputs, out, n)
    return out


def _describe(kernel, bwd_kernel, tensors, block_size, grads):
    """The native plan (kernels/_native.py) of an element-wise op on contiguous `tensors` of
    one shape and dtype: out = kernel(*tensors); the backward launches bwd_kernel(dy, x) where
    `grads` is None, else gives each input the gradient `grads` names."""
    x = tensors[0]
    n = x.numel()
    if not n or x.dtype not in FLOAT_DTYPES or any(
            t.shape != x.shape or t.dtype != x.dtype for t in tensors):
        return "empty, broadcast or mixed-dtype inputs, or a dtype the kernels do not take"
    S = _native.Slot
    inputs = [S(i) for i in range(len(tensors))]
    out, dy, dx = S(len(tensors)), S(len(tensors) + 1), S(len(tensors) + 2)
    forward = [(_bound(kernel, n, block_size, x.dtype), (*inputs, out, n))]
    if grads is not None:
        return _native.plan(tensors, [(x.shape, x.dtype)], forward, out, backward=[],
                            grads=grads)
    bwd = _bound(bwd_kernel, n, block_size, x.dtype)
    ready = bwd.runner is not None
    return _native.plan(tensors, [(x.shape, x.dtype)], forward, out, saved=[inputs[0]],
                        bwd_allocs=[(x.shape, x.dtype)],
                        backward=[(bwd, (dy, inputs[0], dx, n))] if ready else None,
                        grads=[dx])


# -- add: torch's broadcasting; both inputs of one dtype (torch would promote)
def _add_shape(x, y):
    check_inputs("add", x, y, device=DEVICE, same_shape=False, contiguous=False)
    if x.dtype != y.dtype:
        raise TypeError(f"add: dtypes differ: {x.dtype} and {y.dtype} (argument 1); cast one "
                        f"(torch would promote, tritonlab does not)")
    if x.shape == y.shape:  # the common case: no broadcasting to work out
        return x.shape
    try:
        return torch.broadcast_shapes(x.shape, y.shape)
    except RuntimeError:
        raise ValueError(f"add: shapes differ: {tuple(x.shape)} and {tuple(y.shape)} (argument "
                         f"1) and do not broadcast") from None


def _add_impl(x, y, block_size):
    shape = _add_shape(x, y)
    if x.shape != shape or y.shape != shape:
        x, y = x.expand(shape), y.expand(shape)
    x, y = x.contiguous(), y.contiguous()  # read in place where it is dense
    return _launch(add_kernel, (x, y), block_size)


def _add_fake(x, y, block_size):
    return x.new_empty(_add_shape(x, y))


def _add_setup(ctx, inputs, output):
    ctx.shapes = (inputs[0].shape, inputs[1].shape)


def _add_backward(ctx, dout):
    return (*(dout if dout.shape == s else dout.sum_to_size(s) for s in ctx.shapes), None)


add_op = ops.define(__name__, "add", "(Tensor x, Tensor y, int block_size) -> Tensor",
                    _add_impl, _add_fake, _add_backward, _add_setup)


_add_native = _native.NativeOp(
    "TritonlabAddBackward",
    lambda options, x, y: _describe(add_kernel, None, (x, y), options[0],
                                    [_native.GRAD_DY, _native.GRAD_DY]),
    enabled=DEVICE == "cuda")


def add(x, y, block_size=DEFAULT_BLOCK):
    """x + y for fp32/fp16/bf16 tensors of one dtype, broadcast as torch broadcasts;
    differentiable (any order)."""
    out = _add_native((block_size,), x, y)
    if out is not None:
        return out
    ops.require_tensors("add", x, y)
    return add_op(x, y, block_size)


# -- the activations: y = f(x) in fp32, stored in x's dtype; dx = dy * f'(x), fused
def _check_unary(name, *tensors):
    return check_inputs(name, *tensors, device=DEVICE, contiguous=False)


def _activation(name, kernel, bwd_kernel):
    """(forward op, backward op) of one activation."""
    def impl(x, block_size):
        (x,) = check_inputs(name, x, device=DEVICE)
        return _launch(kernel, (x,), block_size)

    def fake(x, block_size):
        _check_unary(name, x)
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    def bwd_impl(dy, x, block_size):
        dy, x = check_inputs(f"{name} backward", dy, x, device=DEVICE)
        return _launch(bwd_kernel, (dy, x), block_size)

    def bwd_fake(dy, x, block_size):
        _check_unary(f"{name} backward", dy, x)
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.block_size = inputs[1]

    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return bwd_op(dy, x, ctx.block_size), None

    bwd_op = ops.define(__name__, f"{name}_backward",
                        "(Tensor dy, Tensor x, int block_size) -> Tensor", bwd_impl, bwd_fake,
                        ops.no_double_backward(f"tritonlab {name}"), _no_setup)
    op = ops.define(__name__, name, "(Tensor x, int block_size) -> Tensor", impl, fake,
                    backward, setup)
    return op, bwd_op


def _no_setup(ctx, inputs, output):
    pass


gelu_op, gelu_backward_op = _activation("gelu", gelu_kernel, gelu_bwd_kernel)
silu_op, silu_backward_op = _activation("silu", silu_kernel, silu_bwd_kernel)


def _native_activation(name, kernel, bwd_kernel, bwd_op):
    return _native.NativeOp(
        f"Tritonlab{name.capitalize()}Backward",
        lambda options, x: _describe(kernel, bwd_kernel, (x,), options[0], None),
        lambda options: lambda dy, x: (bwd_op(dy, x, options[0]),),
        enabled=DEVICE == "cuda")


_gelu_native = _native_activation("gelu", gelu_kernel, gelu_bwd_kernel, gelu_backward_op)
_silu_native = _native_activation("silu", silu_kernel, silu_bwd_kernel, silu_backward_op)


def gelu(x, block_size=DEFAULT_BLOCK):
    """GeLU (tanh approximation), computed in fp32 and stored in x's dtype (fp32/fp16/bf16);
    differentiable (first order)."""
    y = _gelu_native((block_size,), x)
    if y is not None:
        return y
    ops.require_tensors("gelu", x)
    return gelu_op(x, block_size)


def silu(x, block_size=DEFAULT_BLOCK):
    """SiLU, x * sigmoid(x), computed in fp32 and stored in x's dtype (fp32/fp16/bf16);
    differentiable (first order)."""
    y = _silu_native((block_size,), x)
    if y is not None:
        return y
    ops.require_tensors("silu", x)
    return silu_op(x, block_size)
