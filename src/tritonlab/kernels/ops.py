"""The kernels as PyTorch custom operators (torch.library.custom_op): one helper, `define`, that
each op's module calls for its forward and backward, so that torch.compile sees every op as one
opaque node of known shape (no graph break) and autograd sees a formula for it.

Each op module registers, next to its launch functions (docs/ops.md lists them all):

    tritonlab::add        tritonlab::gelu     tritonlab::gelu_backward    tritonlab::silu ...
    tritonlab::softmax    tritonlab::softmax_backward    tritonlab::row_sum
    tritonlab::matmul     tritonlab::matmul_activation_grad
    tritonlab::rmsnorm    tritonlab::rmsnorm_backward

and its public function (`elementwise.gelu`, `softmax.softmax`, ...) checks that its tensor
arguments are tensors and calls the op. What every op follows:
  * the real implementation validates its inputs (device, dtypes, shapes) with the same function
    as its fake; the fake returns outputs of the real one's shapes, dtypes and strides (always
    contiguous), so a meta tensor gets the same errors as the backend's device would;
  * outputs never alias inputs (torch.library's rule): an empty result is a new tensor;
  * the autograd formula calls other custom ops (backward kernels in Triton). Where those have a
    formula themselves (add, row_sum, matmul without activation: they are linear), double
    backward works; elsewhere a backward op's own formula is `no_double_backward`, which raises
    a NotImplementedError naming the op when a second derivative is asked for.

A module copied onto another backend by `backend.with_backend` (e.g. the simulator's copy on a
GPU machine) registers its ops in its own namespace, `tritonlab_sim::...`, so that both copies
keep working side by side.

Attention (kernels/attention.py, its own issue) registers the same way: `define("attention",
"(Tensor q, Tensor k, Tensor v, bool causal, float? scale) -> Tensor", impl, fake, backward,
setup_context)`, with an impl that also returns the log-sum-exp rows the backward needs (a
tuple output, as rmsnorm returns rstd), and `attention_backward` defined with
`no_double_backward`.
"""
from __future__ import annotations

import sys

import torch

NAMESPACE = "tritonlab"


def namespace(module_name):
    """tritonlab for the kernel modules, tritonlab_<backend> for a `with_backend` copy (whose
    module name ends in __<backend>)."""
    _, sep, copy = module_name.rpartition("__")
    return f"{NAMESPACE}_{copy}" if sep and copy.isidentifier() else NAMESPACE


class Op:
    """A registered op, called like a function. Under torch.compile it is the custom op (one
    opaque node); in eager mode the same implementation and autograd formula run without the
    dispatcher: `impl` directly when no gradient is wanted, else through a plain
    autograd.Function with the op's own `setup_context` and `backward`. On an H200 the
    dispatcher's custom-op path cost about 320 us of host time per RMSNorm forward+backward
    step (758 us against 440 us for a plain autograd.Function, 64x4096 fp32), which is why
    eager calls skip it. `custom_op` is the torch.library op (for opcheck)."""

    def __init__(self, custom_op, impl, backward, setup_context):
        self.custom_op, self.impl = custom_op, impl
        self.function = None if backward is None else type(
            f"{custom_op._name}_function", (torch.autograd.Function,),
            {"forward": staticmethod(_forward_with_setup(impl, setup_context or _no_setup)),
             "backward": staticmethod(backward)})

    def __call__(self, *args):
        grad = _wants_grad(args)
        if grad is None or torch.compiler.is_compiling():
            return self.custom_op(*args)  # tensor subclasses (fake, functional) dispatch
        if grad and self.function is not None and torch.is_grad_enabled():
            return self.function.apply(*args)
        return self.impl(*args)

    def __repr__(self):
        return f"<tritonlab op {self.custom_op._qualname}>"


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _no_setup(ctx, inputs, output):
    pass


def _forward_with_setup(impl, setup_context):
    """A classic `forward(ctx, *args)` that runs `impl` and then the op's `setup_context`. A
    Function with a separate `setup_context` would have `Function.apply` bind its arguments
    with `inspect.signature` on every call (torch's bind_default_args): tens of microseconds
    of host time per call."""
    def forward(ctx, *args):
        output = impl(*args)
        setup_context(ctx, args, output)
        return output
    return forward


def define(module_name, name, schema, impl, fake, backward=None, setup_context=None):
    """Register `impl` as the custom op <namespace>::<name> with `schema` ("(Tensor x, int n)
    -> Tensor"), its fake implementation and, where given, its autograd formula. Returns the
    `Op` (call it like a function; `.custom_op` is the torch.library op)."""
    op = torch.library.custom_op(f"{namespace(module_name)}::{name}", impl, mutates_args=(),
                                 schema=schema)
    op.register_fake(fake)
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context)
    return Op(op, impl, backward, setup_context)


def _wants_grad(args):
    """None where a tensor argument is a subclass (fake, functional: the dispatcher's), else
    whether one requires a gradient. A loop, not generators: this runs on every call."""
    grad = False
    for a in args:
        if isinstance(a, torch.Tensor):
            if type(a) not in _PLAIN:
                return None
            grad = grad or a.requires_grad
    return grad


def eager_grad(*tensors):
    """Whether a call on these tensors takes the eager autograd path of `Op`: plain tensors
    (no subclass), one of them requiring a gradient, grad mode on, not under torch.compile.
    For an op's own leaner eager Function (rmsnorm's)."""
    return (bool(_wants_grad(tensors)) and torch.is_grad_enabled()
            and not torch.compiler.is_compiling())


def compiled_autograd():
    """Whether compiled autograd is on (it traces a graph's Python autograd nodes, not the
    native module's C++ node: kernels/_native.py)."""
    module = sys.modules.get("torch._dynamo.compiled_autograd")
    return module is not None and bool(getattr(module, "compiled_autograd_enabled", False))


def no_double_backward(op_name):
    """The autograd formula of a backward op that has none: raises, saying so, when autograd
    asks for a second derivative through `op_name`."""
    def backward(ctx, *grads):
        raise NotImplementedError(
            f"{op_name}: double backward (a gradient of its gradient) is not supported; its "
            f"backward kernel has no derivative. Use the torch op for higher-order gradients "
            f"(docs/ops.md)")
    return backward


def require_tensors(op_name, *tensors):
    """The check a public function makes before calling its op: the dispatcher's own error for
    a non-tensor is less clear."""
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op_name}: argument {i} must be a torch.Tensor, got "
                            f"{type(t).__name__}")
