"""The kernels as PyTorch custom operators (kernels/ops.py): torch.library.opcheck for every op
and backward op, torch.compile of a small model without graph breaks, and hypothesis property
tests of every op and its gradient against float64 torch, over awkward shapes (0, 1, odd) and
layouts (transposed, strided, expanded). Few examples and tiny shapes: the simulator runs them
on a CPU in seconds."""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from torch.library import opcheck

from torch_references import DEV, DTYPES, OP_MATMUL_TOLERANCES, OP_TOLERANCES, rand, rel_err
from tritonlab.kernels import elementwise as ew
from tritonlab.kernels import matmul as mm
from tritonlab.kernels import ops
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import rowsum
from tritonlab.kernels import softmax as sm

GELU = lambda x: F.gelu(x, approximate="tanh")  # noqa: E731
TORCH_ACT = {"none": lambda z: z, "relu": torch.relu, "gelu": GELU}
EXAMPLES = settings(max_examples=8, deadline=None, derandomize=True)


def _req(*tensors):
    return tuple(t.requires_grad_() for t in tensors)


# -- opcheck: schema, autograd registration, fake tensors, AOT dispatch with dynamic shapes
def _x(*shape, seed=0):
    return rand(*shape, seed=seed)


OPCHECKS = {
    "add": lambda: (ew.add_op, (*_req(_x(3, 1), _x(4, seed=1)), 1024)),
    "gelu": lambda: (ew.gelu_op, (*_req(_x(3, 5)), 1024)),
    "gelu_backward": lambda: (ew.gelu_backward_op, (_x(3, 5), _x(3, 5, seed=1), 1024)),
    "silu": lambda: (ew.silu_op, (*_req(_x(7)), 1024)),
    "silu_backward": lambda: (ew.silu_backward_op, (_x(7), _x(7, seed=1), 1024)),
    "softmax": lambda: (sm.softmax_op, (*_req(_x(2, 3, 5)), 1, None, None, None)),
    "softmax_online": lambda: (sm.softmax_op, (*_req(_x(3, 9)), -1, "online", 4, None)),
    "softmax_split": lambda: (sm.softmax_op, (*_req(_x(3, 9)), -1, "split", 4, None)),
    "softmax_backward": lambda: (sm.softmax_backward_op,
                                 (_x(3, 9), _x(3, 9, seed=1), -1, "rows", None, 2)),
    "row_sum": lambda: (rowsum.row_sum_op, (*_req(_x(2, 3, 5)), 1024)),
    "matmul": lambda: (mm.matmul_op, (*_req(_x(5, 7), _x(7, 3, seed=1)), "none", None)),
    "matmul_relu": lambda: (mm.matmul_op, (*_req(_x(5, 7), _x(7, 3, seed=1)), "relu", None)),
    "matmul_gelu": lambda: (mm.matmul_op, (*_req(_x(5, 7), _x(3, 7, seed=1).t()), "gelu",
                                           None)),
    "matmul_activation_grad": lambda: (mm.act_grad_op, (_x(5, 7), _x(7, 3, seed=1),
                                                        _x(5, 3, seed=2), "gelu")),
    "rmsnorm": lambda: (rn.rmsnorm_op, (*_req(_x(2, 3, 8), _x(8, seed=1)), 1e-6)),
    "rmsnorm_backward": lambda: (rn.rmsnorm_backward_op, (_x(4, 8), _x(4, 8, seed=1),
                                                          _x(8, seed=2), _x(4, seed=3).abs())),
}


@pytest.mark.parametrize("name", list(OPCHECKS))
def test_opcheck(name):
    op, args = OPCHECKS[name]()
    opcheck(op.custom_op, args)


def test_ops_are_registered_in_the_tritonlab_namespace():
    for name in ("add", "gelu", "gelu_backward", "silu", "silu_backward", "softmax",
                 "softmax_backward", "row_sum", "matmul", "matmul_activation_grad", "rmsnorm",
                 "rmsnorm_backward"):
        assert hasattr(torch.ops.tritonlab, name), name
    assert ops.namespace("tritonlab.kernels.softmax") == "tritonlab"
    assert ops.namespace("tritonlab.kernels.softmax__sim") == "tritonlab_sim"


# -- torch.compile: a model of our ops is one graph, with eager's values and gradients
class TinyBlock(torch.nn.Module):
    """RMSNorm -> matmul with the GeLU epilogue -> softmax, all tritonlab ops."""

    def __init__(self, d, h):
        super().__init__()
        self.norm = rn.RMSNorm(d).to(DEV)
        self.w = torch.nn.Parameter(rand(d, h, seed=7) / d ** 0.5)

    def forward(self, x):
        return sm.softmax(mm.matmul(self.norm(x), self.w, "gelu"), -1)


def _step(model, x, dy):
    y = model(x)
    grads = torch.autograd.grad(y, [x, *model.parameters()], dy)
    return y, grads


def _compiled_matches_eager(backend, mode=None):
    torch._dynamo.reset()
    model = TinyBlock(24, 40)
    x = rand(6, 24, seed=1).requires_grad_()
    dy = rand(6, 40, seed=2)
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1, \
        explanation.break_reasons
    compiled = torch.compile(model, backend=backend, mode=mode, fullgraph=True)
    y_eager, g_eager = _step(model, x, dy)
    for _ in range(2 if mode else 1):  # reduce-overhead: record, then replay the graph
        y, grads = _step(compiled, x, dy)
    torch.testing.assert_close(y, y_eager)
    for g, want in zip(grads, g_eager):
        torch.testing.assert_close(g, want)


def test_compile_a_model_of_our_ops_without_graph_breaks():
    _compiled_matches_eager("aot_eager")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compile_with_inductor_on_the_gpu(mode):
    _compiled_matches_eager("inductor", mode)


# -- property tests against torch in float64, values and gradients
SIZES = st.sampled_from([0, 1, 2, 3, 5, 8, 17])
LAYOUT = st.sampled_from(["contiguous", "transposed", "strided", "expanded"])
DTYPE = st.sampled_from(DTYPES)


def make(shape, dtype, layout, seed=0):
    """A tensor of `shape` in one of four layouts (the values do not depend on the layout's
    storage beyond what `expanded` repeats)."""
    shape = tuple(shape)
    if not shape:
        return rand(1, dtype=dtype, seed=seed).reshape(())
    if layout == "transposed" and len(shape) >= 2:
        return rand(*shape[::-1], dtype=dtype, seed=seed).permute(*range(len(shape) - 1, -1, -1))
    if layout == "strided" and shape:
        return rand(*shape[:-1], 2 * shape[-1], dtype=dtype, seed=seed)[..., ::2]
    if layout == "expanded" and shape:
        return rand(1, *shape[1:], dtype=dtype, seed=seed).expand(shape)
    return rand(*shape, dtype=dtype, seed=seed)


def grads_of(fn, inputs, dy):
    """(output, gradients) of fn at detached copies of inputs."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    grads = torch.autograd.grad(out, leaves, dy, allow_unused=True) if out.numel() else \
        [torch.zeros_like(t) for t in leaves]
    return out, grads


def err(out, want, rms=0.05):
    """||out - want|| / ||want||, where a `want` of RMS under `rms` (a sum that cancels, the
    gradient of a saturated activation) is measured against RMS `rms`: rounding errors scale
    with the terms of a sum, not with what is left after cancellation."""
    floor = rms * max(1, want.numel()) ** 0.5
    return ((out.double() - want).norm() / max(want.norm().item(), floor)).item()


def check_against_torch(ours, theirs, inputs, tol, seed=9, rms=0.05):
    """ours(*inputs) against theirs(*fp64 inputs): values, dtype, and gradients, each within
    `tol` or twice the error of torch itself in the inputs' dtype (a gradient that cancels,
    like softmax's y * (dy - sum(dy y)), loses digits to the rounding of y in 16 bits)."""
    wide = [t.double() for t in inputs]
    want = theirs(*wide)
    dy = rand(*want.shape, dtype=inputs[0].dtype, seed=seed) if want.dim() else \
        rand(1, dtype=inputs[0].dtype, seed=seed).reshape(())
    out, grads = grads_of(ours, inputs, dy)
    _, want_grads = grads_of(theirs, wide, dy.double())
    torch_out, torch_grads = grads_of(theirs, inputs, dy)  # torch in the inputs' dtype
    assert out.shape == want.shape and out.dtype == inputs[0].dtype
    assert err(out, want, rms) <= max(tol, 2 * err(torch_out, want, rms))
    for g, w, t, tg in zip(grads, want_grads, inputs, torch_grads):
        assert g.shape == t.shape and g.dtype == t.dtype
        assert err(g, w, rms) <= max(tol, 2 * err(tg, w, rms))


@EXAMPLES
@given(shape=st.lists(SIZES, min_size=1, max_size=3), layout=LAYOUT, dtype=DTYPE,
       name=st.sampled_from(["gelu", "silu"]))
def test_property_activations(shape, layout, dtype, name):
    ours, theirs = {"gelu": (ew.gelu, GELU), "silu": (ew.silu, F.silu)}[name]
    check_against_torch(ours, theirs, [make(shape, dtype, layout) * 3], OP_TOLERANCES[dtype])


@EXAMPLES
@given(shape=st.lists(SIZES, min_size=1, max_size=3), layout=LAYOUT, dtype=DTYPE,
       drop=st.integers(0, 2), ones=st.sets(st.integers(0, 2)))
def test_property_add_broadcasts(shape, layout, dtype, drop, ones):
    other = [1 if i in ones else n for i, n in enumerate(shape)][min(drop, len(shape) - 1):]
    x, y = make(shape, dtype, layout), make(other, dtype, "contiguous", seed=1)
    check_against_torch(ew.add, torch.add, [x, y], OP_TOLERANCES[dtype])


@EXAMPLES
@given(shape=st.lists(SIZES, min_size=1, max_size=3), layout=LAYOUT, dtype=DTYPE,
       dim=st.integers(-3, 2), variant=st.sampled_from([None, "row", "rows", "online", "split"]))
def test_property_softmax(shape, layout, dtype, dim, variant):
    dim = dim % len(shape)
    block = 4 if variant in ("online", "split") else None  # several blocks along a row
    x = make(shape, dtype, layout) * 4
    check_against_torch(lambda t: sm.softmax(t, dim, variant, block),
                        lambda t: torch.softmax(t, dim), [x], OP_TOLERANCES[dtype])


@EXAMPLES
@given(shape=st.lists(SIZES, min_size=0, max_size=3), layout=LAYOUT, dtype=DTYPE)
def test_property_row_sum(shape, layout, dtype):
    x = make(shape, dtype, layout)
    check_against_torch(lambda t: rowsum.row_sum(t, 4), lambda t: t.sum(-1), [x],
                        OP_TOLERANCES[dtype] * 4)


@EXAMPLES
@given(m=SIZES, k=SIZES, n=SIZES, layouts=st.tuples(LAYOUT, LAYOUT), dtype=DTYPE,
       activation=st.sampled_from(mm.ACTIVATIONS))
def test_property_matmul(m, k, n, layouts, dtype, activation):
    a, b = make((m, k), dtype, layouts[0]), make((k, n), dtype, layouts[1], seed=1)
    # a product's error scales with sqrt(length) of its sums, whatever cancels
    check_against_torch(lambda p, q: mm.matmul(p, q, activation),
                        lambda p, q: TORCH_ACT[activation](p @ q), [a, b], OP_MATMUL_TOLERANCES[dtype],
                        rms=0.1 * max(1, m, k, n) ** 0.5)


@EXAMPLES
@given(lead=st.lists(SIZES, min_size=1, max_size=2), n=SIZES.filter(bool), layout=LAYOUT,
       dtype=DTYPE)
def test_property_rmsnorm(lead, n, layout, dtype):
    x, g = make((*lead, n), dtype, layout) * 2, make((n,), dtype, "contiguous", seed=1)
    check_against_torch(rn.rmsnorm, lambda p, q: F.rms_norm(p, (n,), q, 1e-6), [x, g],
                        OP_TOLERANCES[dtype] * 4)


# -- eager calls skip the dispatcher (ops.Op), and give what the custom op gives
@pytest.mark.parametrize("op, args", [
    (rn.rmsnorm_op, lambda: (*_req(_x(3, 8), _x(8, seed=1)), 1e-6)),
    (sm.softmax_op, lambda: (*_req(_x(4, 9)), -1, None, None, None)),
    (ew.gelu_op, lambda: (*_req(_x(5, 3)), 1024)),
])
def test_eager_path_matches_the_custom_op(op, args, monkeypatch):
    calls = []
    custom = op.custom_op
    monkeypatch.setattr(op, "custom_op", lambda *a: calls.append(1) or custom(*a))
    a1, a2 = args(), args()
    out_eager = op(*a1)
    assert not calls  # plain tensors in eager mode: no dispatcher
    out_custom = custom(*a2)
    first = (lambda o: o[0] if isinstance(o, tuple) else o)
    torch.testing.assert_close(first(out_eager), first(out_custom), rtol=0, atol=0)
    first(out_eager).sum().backward()
    first(out_custom).sum().backward()
    for x1, x2 in zip(a1, a2):
        if isinstance(x1, torch.Tensor):
            torch.testing.assert_close(x1.grad, x2.grad, rtol=0, atol=0)


def test_rmsnorm_rstd_output_has_no_gradient():
    """rmsnorm's op returns rstd for its backward only: not differentiable, on the eager path
    and through the custom op, and y's gradient is the same either way."""
    for call in (rn.rmsnorm_op, rn.rmsnorm_op.custom_op):
        x, g = _req(_x(2, 3, 8), _x(8, seed=1))
        y, rstd = call(x, g, 1e-6)
        assert y.requires_grad and not rstd.requires_grad
        torch.autograd.backward(y, _x(2, 3, 8, seed=2))
        ref_x, ref_g = _req(x.detach().clone(), g.detach().clone())
        torch.autograd.backward(F.rms_norm(ref_x, (8,), ref_g, 1e-6), _x(2, 3, 8, seed=2))
        assert rel_err(x.grad, ref_x.grad) < 1e-5 and rel_err(g.grad, ref_g.grad) < 1e-5


def test_rmsnorm_backward_twice_keeps_the_first_gradients():
    """The eager backward writes dg into a buffer made in the forward: a second backward of
    the same graph (retain_graph) must get its own, leaving the first result as it was."""
    x, g = _req(_x(5, 8), _x(8, seed=1))
    y = rn.rmsnorm(x, g)
    dy1, dy2 = _x(5, 8, seed=2), _x(5, 8, seed=3)
    first = torch.autograd.grad(y, (x, g), dy1, retain_graph=True)
    kept = [t.clone() for t in first]
    second = torch.autograd.grad(y, (x, g), dy2)
    for t, k in zip(first, kept):
        torch.testing.assert_close(t, k, rtol=0, atol=0)
    ref_x, ref_g = _req(x.detach().clone(), g.detach().clone())
    want = torch.autograd.grad(F.rms_norm(ref_x, (8,), ref_g, 1e-6), (ref_x, ref_g), dy2)
    for t, w in zip(second, want):
        assert rel_err(t, w) < 1e-5


@pytest.mark.parametrize("layout", ["contiguous", "3d", "transposed"])
def test_rmsnorm_lean_eager_path_matches_the_custom_op(layout):
    """`rmsnorm` with a gradient takes its own lean Function (no dispatch, the forward's plan in
    the backward): the same bits as the registered op, values and gradients."""
    base = {"contiguous": _x(6, 8), "3d": _x(2, 3, 8), "transposed": _x(8, 6).t()}[layout]
    g = _x(8, seed=1)
    x1, g1 = _req(base.detach().clone(), g.clone())
    x2, g2 = _req(base.detach().clone(), g.clone())
    if layout == "transposed":
        x1, x2 = x1.t().contiguous().t(), x2.t().contiguous().t()
        x1.retain_grad(), x2.retain_grad()
    y1 = rn.rmsnorm(x1, g1)
    y2 = rn.rmsnorm_op.custom_op(x2, g2, 1e-6)[0]
    # the Python Function, or on a GPU after the signature's first step the native C++ node
    assert y1.grad_fn is not None and y1.grad_fn.name() in ("_EagerRMSNormBackward",
                                                            "TritonlabRMSNormBackward")
    torch.testing.assert_close(y1, y2, rtol=0, atol=0)
    dy = _x(*base.shape, seed=2)
    torch.autograd.backward(y1, dy)
    torch.autograd.backward(y2, dy)
    torch.testing.assert_close(x1.grad, x2.grad, rtol=0, atol=0)
    torch.testing.assert_close(g1.grad, g2.grad, rtol=0, atol=0)


def test_rmsnorm_under_compiled_autograd_and_in_place_and_frozen_weight():
    """The lean eager path's backward under compiled autograd (Dynamo traces it: the op, not
    the launch), its output a tensor of its own (in-place ops work, 3-D included), and a
    frozen weight (no dg asked for)."""
    x, g = _req(_x(2, 3, 8), _x(8, seed=1))
    ref_x, ref_g = _req(x.detach().clone(), g.detach().clone())
    with torch._dynamo.compiled_autograd._enable(torch.compile(backend="aot_eager")):
        (rn.rmsnorm(x, g) ** 2).sum().backward()
    (F.rms_norm(ref_x, (8,), ref_g, 1e-6) ** 2).sum().backward()
    assert rel_err(x.grad, ref_x.grad) < 1e-5 and rel_err(g.grad, ref_g.grad) < 1e-5
    torch._dynamo.reset()
    y = rn.rmsnorm(x, g)
    y.mul_(2)  # not a view of an intermediate: autograd allows it
    y.sum().backward()
    frozen = _x(8, seed=1)
    (x2,) = _req(x.detach().clone())
    rn.rmsnorm(x2, frozen).sum().backward()
    ref = x2.detach().clone().requires_grad_()
    F.rms_norm(ref, (8,), frozen, 1e-6).sum().backward()
    assert frozen.grad is None and rel_err(x2.grad, ref.grad) < 1e-5
