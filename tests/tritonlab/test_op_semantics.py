"""torch's semantics at the edges for every public op, on the active backend:
zero-sized dimensions, NaN and ±inf, rows of -inf, non-contiguous and expanded inputs, dtype
rules, device errors, and what autograd gives (first order everywhere; second order where it is
supported, a clear error elsewhere). docs/ops.md states the rules these tests hold."""
import warnings

import pytest
import torch
import torch.nn.functional as F

from torch_references import DEV, rand
from tritonlab.kernels import elementwise as ew
from tritonlab.kernels import matmul as mm
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import rowsum
from tritonlab.kernels import softmax as sm

INF, NAN = float("inf"), float("nan")
GELU = lambda x: F.gelu(x, approximate="tanh")  # noqa: E731
# (ours, torch's) for the one-tensor ops
UNARY = {"gelu": (ew.gelu, GELU), "silu": (ew.silu, F.silu),
         "softmax": (sm.softmax, lambda x: torch.softmax(x, -1)),
         "row_sum": (rowsum.row_sum, lambda x: x.sum(-1))}
TORCH_ACT = {"none": lambda z: z, "relu": torch.relu, "gelu": GELU}


def same(out, want, tol=None):
    """Equal to torch's result up to fp32 rounding (`tol`: TF32's for matmuls), NaN where torch
    has NaN."""
    assert out.shape == want.shape and out.dtype == want.dtype
    torch.testing.assert_close(out, want, equal_nan=True, rtol=tol or 2e-5, atol=tol or 1e-6)


# -- the cases of issue 15 as reported
def test_issue_cases():
    assert sm.softmax(rand(5, 0)).shape == (5, 0)
    assert sm.softmax(rand(0, 3), dim=0).shape == (0, 3)
    assert torch.equal(rowsum.row_sum(rand(4, 0)), torch.zeros(4, device=DEV))
    x = rand(2, 20000)  # long rows: the online kernel
    x[0, 1234] = NAN
    y = sm.softmax(x)
    assert torch.isnan(y[0]).all() and not torch.isnan(y[1]).any()
    a, b = rand(4, 6), rand(6, 5, seed=1)
    a[1, 2] = NAN
    same(mm.matmul(a, b, "relu"), torch.relu(a @ b), tol=1e-2)
    assert torch.isnan(mm.matmul(a, b, "relu")[1]).all()
    x = rand(7).requires_grad_()
    ew.gelu(x).sum().backward()
    assert x.grad is not None
    x = rand(3, 5).requires_grad_()
    sm.softmax(x).sum().backward()
    assert x.grad.abs().max() < 1e-5  # rows sum to 1: the gradient of their sum is 0
    x, g = rand(3, 8).requires_grad_(), rand(8, seed=1).requires_grad_()
    (dx,) = torch.autograd.grad(rn.rmsnorm(x, g).sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="rmsnorm: double backward"):
        dx.sum().backward()


# -- zero-sized dimensions: empty results (zeros for sums), empty gradients
EMPTY = [(0,), (0, 3), (3, 0), (2, 0, 4)]


@pytest.mark.parametrize("shape", EMPTY)
@pytest.mark.parametrize("name", list(UNARY))
def test_empty_unary(name, shape):
    ours, theirs = UNARY[name]
    x = rand(*shape).requires_grad_()
    out = ours(x)
    same(out, theirs(x.detach()))
    out.sum().backward()
    assert x.grad.shape == x.shape and not x.grad.any()


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_empty_softmax_any_dim(dim):
    x = rand(0, 3, 2)
    same(sm.softmax(x, dim), torch.softmax(x, dim))


@pytest.mark.parametrize("mkn", [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
@pytest.mark.parametrize("activation", mm.ACTIVATIONS)
def test_empty_matmul(mkn, activation):
    M, K, N = mkn
    a, b = rand(M, K).requires_grad_(), rand(K, N, seed=1).requires_grad_()
    out = mm.matmul(a, b, activation)
    same(out, TORCH_ACT[activation](a.detach() @ b.detach()))
    out.backward(torch.ones_like(out))
    want_a = (TORCH_ACT[activation](torch.zeros(M, N, device=DEV)) * 0 + 1) @ b.detach().t() \
        if activation == "none" else None
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    if want_a is not None:
        same(a.grad, want_a, tol=1e-2)


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (2, 0, 5)])
def test_empty_rmsnorm_and_add(shape):
    x, g = rand(*shape).requires_grad_(), rand(shape[-1]).requires_grad_()
    y = rn.rmsnorm(x, g)
    same(y, F.rms_norm(x.detach(), (shape[-1],), g.detach(), 1e-6))
    y.sum().backward()
    assert x.grad.shape == x.shape and torch.equal(g.grad, torch.zeros_like(g))
    z = ew.add(x, g)
    assert z.shape == x.shape
    z.sum().backward()


# -- NaN and ±inf propagate as torch propagates them
SPECIALS = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.0, -3.0, 1e30, -1e30, 15.0, -15.0])


@pytest.mark.parametrize("name", ["gelu", "silu"])
def test_activations_of_specials_and_their_gradients(name):
    ours, theirs = UNARY[name]
    x = SPECIALS.to(DEV).requires_grad_()
    xt = SPECIALS.to(DEV).requires_grad_()
    same(ours(x), theirs(xt))
    ours(x).backward(torch.ones_like(x))
    theirs(xt).backward(torch.ones_like(xt))
    same(x.grad, xt.grad)


def test_add_and_row_sum_of_specials():
    x = SPECIALS.to(DEV)
    same(ew.add(x, x.flip(0)), x + x.flip(0))
    rows = torch.tensor([[INF, -INF, 1.0], [NAN, 1.0, 2.0], [INF, 1.0, 2.0], [-INF, -INF, 0.0]],
                        device=DEV)
    same(rowsum.row_sum(rows), rows.sum(-1))


@pytest.mark.parametrize("variant,block", [("row", None), ("rows", None), ("online", 4),
                                           ("split", 4)])
def test_softmax_specials_every_variant_and_backward(variant, block):
    """NaN anywhere, +inf, a row of -inf, -inf in part of a row: torch's values, and torch's
    gradients (NaN rows give NaN gradients)."""
    x = rand(6, 13)
    x[0, 3] = NAN
    x[1, 12] = NAN  # last element, in the last block of the online kernel
    x[2, 5] = INF
    x[3] = -INF
    x[4, :7] = -INF
    x[5, 0] = INF
    x[5, 1] = -INF
    xo, xt = x.clone().requires_grad_(), x.clone().requires_grad_()
    y = sm.softmax(xo, -1, variant, block)
    same(y, torch.softmax(xt, -1))
    dy = rand(6, 13, seed=1)
    y.backward(dy)
    torch.softmax(xt, -1).backward(dy)
    same(xo.grad, xt.grad)


@pytest.mark.parametrize("nan_at", [12, 0, 5])
def test_softmax_split_nan_alone_in_a_chunk(nan_at):
    """One row of 16 in 4 chunks of 4 (the split variant cuts a lone row into 4 on either
    backend): a chunk whose only value other than -inf is NaN keeps the row NaN (max.f32 drops
    the NaN from the chunk's max on the GPU, so only its sum carries it)."""
    x = rand(1, 16)
    x[0, nan_at // 4 * 4:nan_at // 4 * 4 + 4] = -INF
    x[0, nan_at] = NAN
    same(sm.softmax(x, -1, "split", 4), torch.softmax(x, -1))
    assert sm._chunks(1, 16, 4, x, sm.tuning_for("softmax", x.get_device())) == (4, 4)


@pytest.mark.parametrize("activation", mm.ACTIVATIONS)
def test_matmul_epilogues_of_specials(activation):
    a, b = rand(5, 4), rand(4, 6, seed=1)
    a[0, 1] = NAN
    a[1, 0] = INF  # row 1: ±inf where b's row 0 has both signs
    a[2] = 1e30  # overflows fp32 in the sum: ±inf
    b[:, 2] = 0.0
    a[3, 3] = -INF
    want = TORCH_ACT[activation](a.double() @ b.double()).float()
    out = mm.matmul(a, b, activation)
    assert torch.equal(torch.isnan(out), torch.isnan(want))
    assert torch.equal(torch.isinf(out), torch.isinf(want))
    finite = torch.isfinite(want)
    torch.testing.assert_close(out[finite], want[finite], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_matmul_epilogue_gradient_at_nan_and_zero(activation):
    """relu passes the gradient where its output is NaN and stops it at 0, as torch's
    threshold_backward does; gelu's is NaN at NaN."""
    a = torch.tensor([[NAN, 0.0], [0.0, 0.0], [1.0, 0.0]], device=DEV).requires_grad_()
    b = torch.eye(2, device=DEV).requires_grad_()
    at, bt = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    dc = torch.ones(3, 2, device=DEV)
    mm.matmul(a, b, activation).backward(dc)
    TORCH_ACT[activation](at @ bt).backward(dc)
    same(a.grad, at.grad, tol=1e-2)


def test_rmsnorm_specials():
    x = rand(4, 6)
    x[0, 2] = NAN
    x[1, 0] = INF
    x[2] = 0.0  # rstd = 1/sqrt(eps): a row of zeros stays zeros
    g = rand(6, seed=1)
    # torch's CPU formula: rstd = 0 for the row with inf, so NaN there and 0 elsewhere; its CUDA
    # kernel gives NaN across that row (docs/ops.md): the reference is CPU torch's
    same(rn.rmsnorm(x, g).cpu(), F.rms_norm(x.cpu(), (6,), g.cpu(), 1e-6))


# -- non-contiguous and expanded inputs: what the contiguous copy gives
LAYOUTS = {"transposed": lambda t: t.t().contiguous().t(), "strided": lambda t: torch.cat(
    [t, t], -1)[..., ::2] if t.shape[-1] else t, "expanded": lambda t: t[:1].expand_as(t)}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_non_contiguous_inputs(layout):
    make = LAYOUTS[layout]
    x = make(rand(6, 10, scale=2))
    assert not x.is_contiguous()
    dense = x.contiguous()
    for name, (ours, _) in UNARY.items():
        same(ours(x), ours(dense))
    same(sm.softmax(x, 0), sm.softmax(dense, 0))
    same(ew.add(x, x), dense + dense)
    g = rand(10, seed=1)
    same(rn.rmsnorm(x, g), rn.rmsnorm(dense, g))
    same(mm.matmul(x, x.t(), "gelu"), mm.matmul(dense, dense.t().contiguous(), "gelu"),
         tol=1e-2)
    xg = x.detach().requires_grad_()  # gradients keep the input's shape, dense
    sm.softmax(xg, 0).backward(rand(6, 10, seed=2))
    assert xg.grad.shape == x.shape


def test_add_broadcasts_as_torch():
    x, y = rand(3, 1, 5).requires_grad_(), rand(4, 1, seed=1).requires_grad_()
    xt, yt = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    same(ew.add(x, y), xt + yt)
    ew.add(x, y).backward(rand(3, 4, 5, seed=2))
    (xt + yt).backward(rand(3, 4, 5, seed=2))
    same(x.grad, xt.grad)
    same(y.grad, yt.grad)
    with pytest.raises(ValueError, match="do not broadcast"):
        ew.add(rand(3, 2), rand(3))


# -- dtype rules: what is accepted, and the output dtype (torch's for the same inputs)
ACCEPTS = {"add": ("fp32 fp16 bf16", lambda x: ew.add(x, x), lambda x: x + x),
           "gelu": ("fp32 fp16 bf16", ew.gelu, GELU), "silu": ("fp32 fp16 bf16", ew.silu, F.silu),
           "softmax": ("fp32 fp16 bf16 fp64", sm.softmax, lambda x: torch.softmax(x, -1)),
           "row_sum": ("fp32 fp16 bf16 fp64", rowsum.row_sum, lambda x: x.sum(-1)),
           "matmul": ("fp32 fp16 bf16", lambda x: mm.matmul(x, x.t()), lambda x: x @ x.t()),
           "rmsnorm": ("fp32 fp16 bf16 fp64", lambda x: rn.rmsnorm(x, x[0]),
                       lambda x: F.rms_norm(x, (x.shape[-1],), x[0], 1e-6))}
DTYPE_NAMES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
               "fp64": torch.float64, "int32": torch.int32, "int64": torch.int64,
               "bool": torch.bool}


@pytest.mark.parametrize("name", list(ACCEPTS))
def test_dtype_rules(name):
    accepted, ours, theirs = ACCEPTS[name]
    for dtype_name, dtype in DTYPE_NAMES.items():
        x = (rand(4, 8, scale=3).to(dtype) if dtype.is_floating_point else
             torch.arange(32, device=DEV).reshape(4, 8).to(dtype))
        if dtype_name in accepted.split():
            assert ours(x).dtype == theirs(x).dtype == dtype
        else:
            with pytest.raises(TypeError, match="supported"):
                ours(x)


def test_mixed_dtypes_are_refused():
    with pytest.raises(TypeError, match="dtypes differ"):
        mm.matmul(rand(2, 3), rand(3, 2, dtype=torch.float16))
    with pytest.raises(TypeError, match="dtypes differ"):
        ew.add(rand(3), rand(3, dtype=torch.bfloat16))
    # rmsnorm takes a weight of another float dtype, and returns x's dtype as torch does
    x, g = rand(2, 8, dtype=torch.bfloat16), rand(8)
    assert rn.rmsnorm(x, g).dtype == torch.bfloat16


# -- devices: a tensor where the backend does not run is a clear error, before any launch
CALLS = {"add": lambda t: ew.add(t, t), "gelu": ew.gelu, "silu": ew.silu,
         "softmax": sm.softmax, "row_sum": rowsum.row_sum,
         "matmul": lambda t: mm.matmul(t, t.t(), "relu"),
         "rmsnorm": lambda t: rn.rmsnorm(t, t[0])}


@pytest.mark.parametrize("name", list(CALLS))
def test_wrong_device_is_a_clear_error(name):
    other = "meta"  # a device the backend never runs on (the GPU test below: the CPU)
    with pytest.raises(ValueError, match=r"is on meta, but the backend of these kernels runs"):
        CALLS[name](torch.zeros(4, 4, device=other))


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CALLS))
def test_cpu_tensor_on_the_gpu_backend(name):
    with pytest.raises(ValueError, match=r"is on cpu, but the backend of these kernels runs on "
                                         r"cuda"):
        CALLS[name](torch.zeros(4, 4))


# -- autograd of order two: works for the linear ops, a clear error for the others
def test_double_backward_of_linear_ops():
    x = rand(3, 4, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradgradcheck(rowsum.row_sum, (x,))
    with warnings.catch_warnings():  # fp32 on purpose (torch warns that it is not fp64)
        warnings.filterwarnings("ignore", "Input #[0-9]+ requires gradient and is not a double")
        assert torch.autograd.gradgradcheck(lambda t: ew.add(t, t * 2),
                                            (x.float().requires_grad_(),), eps=1e-2, atol=1e-2)
    a, b = rand(3, 4).requires_grad_(), rand(4, 5, seed=1).requires_grad_()
    (da,) = torch.autograd.grad((mm.matmul(a, b) ** 2).sum(), a, create_graph=True)
    (dda,) = torch.autograd.grad(da.sum(), b)
    at, bt = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    (da_t,) = torch.autograd.grad(((at @ bt) ** 2).sum(), at, create_graph=True)
    (dda_t,) = torch.autograd.grad(da_t.sum(), bt)
    torch.testing.assert_close(dda.double(), dda_t, rtol=3e-2, atol=3e-2)  # TF32, twice


@pytest.mark.parametrize("name,fn", [
    ("gelu", ew.gelu), ("silu", ew.silu), ("softmax", sm.softmax),
    ("matmul", lambda t: mm.matmul(t, t.t(), "relu")),
    ("matmul", lambda t: mm.matmul(t, t.t(), "gelu")),
    ("rmsnorm", lambda t: rn.rmsnorm(t, torch.ones(t.shape[-1], device=DEV)))])
def test_double_backward_not_supported_says_so(name, fn):
    x = rand(3, 4).requires_grad_()
    (dx,) = torch.autograd.grad((fn(x) * rand(*fn(x).shape, seed=5)).sum(), x,
                                create_graph=True)
    with pytest.raises(NotImplementedError, match=f"{name}.*double backward.*not supported"):
        dx.sum().backward()


def test_rmsnorm_backward_checks_rstd():
    """The backward launch function and op take rstd as the forward made it: another dtype,
    shape or layout is a ValueError that says what rstd must be, not a kernel failure."""
    x, g, dy = rand(4, 8), rand(8, seed=1), rand(4, 8, seed=2)
    _, rstd = rn.rmsnorm_forward(x, g)
    for bad in (rstd.double(), rstd[:3], torch.stack([rstd, rstd], 1)[:, 0]):
        with pytest.raises(ValueError, match=r"rstd must be the forward's, a contiguous float32"):
            rn.rmsnorm_backward(dy, x, g, bad)
        with pytest.raises(ValueError, match="rstd must be"):
            rn.rmsnorm_backward_op(dy, x, g, bad)
