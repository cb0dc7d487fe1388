"""The native autograd node (kernels/_native.py, _native.cpp): RMSNorm's training step with
its backward in C++. The build and the launch packing are checked wherever a C++ compiler is
(CI included); the node itself launches Triton kernels, so its tests carry the gpu marker and
compare it, bit for bit, with the registered op on real Triton."""
import struct

import pytest
import torch
import torch.nn.functional as F

from tritonlab.kernels import _native
from tritonlab.kernels import rmsnorm as rn

NAME = "TritonlabRMSNormBackward"


def _module():
    mod = _native.module()
    if mod is None:
        pytest.skip(f"the native module is not built here: {_native.why()}")
    return mod


def test_launch_packs_parameters_as_triton_passes_them():
    """One 8-byte cell per non-constexpr parameter (pointers, i32, i64, fp32 bits, the call's
    float), then Triton 3.6's two null scratch pointers."""
    mod = _module()
    k = mod.KINDS
    launch = mod.Launch("k", 0, [3, 1, 1], 128, 0,
                        [k["slot"], k["i32"], k["i64"], k["f32"], k["scalar"], k["slot"]],
                        [1, -5, 1 << 40, struct.unpack("<I", struct.pack("<f", 2.5))[0], 0, 0])
    cells = launch.pack([0x1000, 0x2000], 0.25)
    f32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]  # noqa: E731
    assert cells == [0x2000, 2 ** 32 - 5, 1 << 40, f32(2.5), f32(0.25), 0x1000, 0, 0]
    with pytest.raises(IndexError, match="bad slot"):
        mod.Launch("k", 0, [1, 1, 1], 32, 0, [k["slot"]], [7]).pack([1])
    with pytest.raises(ValueError, match="grid"):
        mod.Launch("k", 0, [1, 1], 32, 0, [], [])
    with pytest.raises(ValueError, match="kind"):
        mod.Launch("k", 0, [1, 1, 1], 32, 0, [9], [0])
    names = dict(mod.slots())
    assert len(set(names.values())) == len(names) and {"x", "dy", "dg"} <= set(names)


def test_unbuildable_module_says_why(monkeypatch, tmp_path):
    """No compiler, or the switch off: module() is None and why() names the reason, and the
    public function still runs (the Python path)."""
    monkeypatch.setattr(_native, "_state", {})
    monkeypatch.setenv("TRITONLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    assert _native.module() is None and "did not run" in _native.why()
    monkeypatch.setattr(_native, "_state", {})
    monkeypatch.setattr(_native, "ENABLED", False)
    assert _native.module() is None and _native.why() == "TRITONLAB_NATIVE=0"


gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _inputs(shape, dtype, seed=0, layout="contiguous"):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if layout == "transposed":
        x = torch.randn(shape[::-1], generator=gen, device="cuda", dtype=dtype).t()
    else:
        x = torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
    g = torch.randn(shape[-1], generator=gen, device="cuda", dtype=dtype)
    dy = torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
    return x, g, dy


def _step(call, x, g, dy, frozen=False):
    x = x.detach().clone().requires_grad_()
    g = g.detach().clone().requires_grad_(not frozen)
    y = call(x, g)
    y.backward(dy)
    return y, x.grad, g.grad, y.grad_fn.name()


def _warm(x, g, dy):
    """A first step through the Python Function, which compiles the kernels the native plan
    launches."""
    _step(rn.rmsnorm, x, g, dy)


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype,layout", [
    ((6, 8), torch.float32, "contiguous"),
    ((64, 4096), torch.bfloat16, "contiguous"),
    ((2, 3, 1000), torch.float16, "contiguous"),
    ((40, 24), torch.float32, "transposed"),
    ((4, 40000), torch.float32, "contiguous"),  # the wide-row backward (dot + tiled)
    ((3, 20000), torch.bfloat16, "contiguous"),
    ((5, 64), torch.float64, "contiguous"),
])
def test_native_step_matches_the_registered_op(shape, dtype, layout):
    _module()
    x, g, dy = _inputs(shape, dtype, layout=layout)
    _warm(x, g, dy)
    y1, dx1, dg1, name = _step(rn.rmsnorm, x, g, dy)
    assert name == NAME, rn._plan(x, g).native_why
    y2, dx2, dg2, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    for got, want in ((y1, y2), (dx1, dx2), (dg1, dg2)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    ref = F.rms_norm(x.float(), (shape[-1],), g.float(), 1e-6)
    torch.testing.assert_close(y1.float(), ref, rtol=2e-2, atol=2e-2)


@gpu
@needs_cuda
def test_native_frozen_weight_twice_and_released_graph():
    """A frozen weight gets no gradient; retain_graph gives a second backward its own buffers;
    without it, a second backward says the graph was freed."""
    _module()
    x, g, dy = _inputs((16, 256), torch.float32, seed=1)
    _warm(x, g, dy)
    _, dx_frozen, dg_frozen, name = _step(rn.rmsnorm, x, g, dy, frozen=True)
    _, dx_ref, _, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    assert name == NAME and dg_frozen is None
    torch.testing.assert_close(dx_frozen, dx_ref, rtol=0, atol=0)
    xr, gr = x.clone().requires_grad_(), g.clone().requires_grad_()
    y = rn.rmsnorm(xr, gr)
    assert y.grad_fn.name() == NAME
    first = torch.autograd.grad(y, (xr, gr), dy, retain_graph=True)
    kept = [t.clone() for t in first]
    second = torch.autograd.grad(y, (xr, gr), 2 * dy)
    for a, b, c in zip(first, kept, second):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
        torch.testing.assert_close(c, 2 * b, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(y, (xr, gr), dy)


@gpu
@needs_cuda
def test_native_in_place_change_and_create_graph():
    """x changed in place after the forward: autograd's version check; create_graph: the
    first-order gradient as before, and the second order raises NotImplementedError."""
    _module()
    x, g, dy = _inputs((8, 128), torch.float32, seed=2)
    _warm(x, g, dy)
    xr, gr = x.clone().requires_grad_(), g.clone().requires_grad_()
    base = xr * 1.0
    y = rn.rmsnorm(base, gr)
    assert y.grad_fn.name() == NAME
    base.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(dy)
    y = rn.rmsnorm(xr, gr)
    (dx,) = torch.autograd.grad(y, xr, dy, create_graph=True)
    _, want, _, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    torch.testing.assert_close(dx, want, rtol=0, atol=0)
    with pytest.raises(NotImplementedError, match="double backward"):
        dx.sum().backward()


@gpu
@needs_cuda
def test_native_side_stream_cuda_graph_and_misaligned_input():
    """The node launches on its forward's stream; a CUDA graph captures the whole step; an x
    that is not 16-byte aligned takes the Python Function (same values)."""
    _module()
    x, g, dy = _inputs((32, 512), torch.bfloat16, seed=3)
    _warm(x, g, dy)
    _, dx_ref, dg_ref, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _, dx, dg, name = _step(rn.rmsnorm, x, g, dy)
    torch.cuda.current_stream().wait_stream(side)
    assert name == NAME
    torch.testing.assert_close(dx, dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(dg, dg_ref, rtol=0, atol=0)

    xs, gs = x.clone().requires_grad_(), g.clone().requires_grad_()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm the capture's allocations
        rn.rmsnorm(xs, gs).backward(dy)
    torch.cuda.current_stream().wait_stream(side)
    xs.grad = gs.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = rn.rmsnorm(xs, gs)
        y.backward(dy)
    assert y.grad_fn.name() == NAME
    xs.grad.zero_(), gs.grad.zero_()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(xs.grad, dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(gs.grad, dg_ref, rtol=0, atol=0)

    buf = torch.empty(x.numel() + 1, device="cuda", dtype=x.dtype)
    odd = buf[1:].view(x.shape).copy_(x).requires_grad_()
    assert odd.data_ptr() % 16 and odd.is_leaf
    go = g.clone().requires_grad_()
    y = rn.rmsnorm(odd, go)
    assert y.grad_fn.name() != NAME
    y.backward(dy)
    torch.testing.assert_close(odd.grad, dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(go.grad, dg_ref, rtol=0, atol=0)
