"""The launch cache (tritonlab/kernels/_launch.py): on a GPU it calls Triton's compiled kernels
directly after the first call of each specialisation key. Checked on the simulator (same calls,
same results), with a stand-in for Triton (the direct path), and on the GPU."""
import pytest
import torch

from tritonlab.kernels import softmax as sm

from torch_references import rand, rel_err

# -- the launch cache (kernels/_launch.launch): on a GPU it skips Triton's per-call dispatch, so
#    calls that Triton would specialise differently (pointer alignment, sizes equal to 1 or
#    divisible by 16) must not reuse each other's compiled kernel. Same calls on the simulator.
def test_launch_cache_keeps_specialisations_apart():
    from tritonlab.kernels import elementwise as ew
    base = rand(4099, seed=3)
    other = rand(4099, seed=4)
    for start in (0, 1, 0, 3, 4):  # 16-byte aligned, then not, then aligned again
        for n in (1, 16, 17, 4032, 4095):
            x, y = base[start:start + n], other[start:start + n]
            torch.testing.assert_close(ew.add(x, y), x + y, rtol=0, atol=0)
    rows = rand(33, 130, seed=5)
    for sl in (rows, rows[1:], rows[:, 2:], rows[:1]):  # offsets, strides, one row
        ref = torch.softmax(sl.double(), -1)
        assert rel_err(sm.softmax(sl), ref) < 1e-6


def test_launch_spec_key():
    from tritonlab.kernels._launch import _spec
    t = torch.zeros(8)
    assert _spec(t) != _spec(t[1:])  # alignment
    assert _spec(t) == _spec(t[4:])  # 16 bytes on: still aligned
    assert _spec(1) != _spec(2) != _spec(32)
    assert _spec(17) == _spec(19) and _spec(2 ** 31) != _spec(17)
    assert _spec(True) != _spec(1) and _spec(0.5) == _spec(2.0)
    import numpy as np
    assert _spec(np.int64(32)) == _spec(32)
    assert _spec(object()) is None  # unknown: the call takes Triton's own path


class _FakeCompiled:
    """What `launch` uses of Triton's CompiledKernel: `run` (the direct path) and
    `compiled[grid](...)` (Triton's runner), each raising the errors it is given, in order."""

    function, packed_metadata = "function", "packed"

    def __init__(self, run_errors=(), runner_errors=()):
        self.runs, self.runner_calls, self.handles = [], [], 0
        self.run_errors, self.runner_errors = list(run_errors), list(runner_errors)

    def _init_handles(self):
        self.handles += 1

    def run(self, *args):
        if self.run_errors:
            raise self.run_errors.pop(0)
        self.runs.append(args)

    def __getitem__(self, grid):
        def runner(*args):
            self.runner_calls.append((grid, args))
            if self.runner_errors:
                raise self.runner_errors.pop(0)
        return runner

    def launch_metadata(self, grid, stream, *args):
        return {"name": "fake_kernel", "grid": grid}


class _FakeKernel:
    """What `launch` uses of a Triton JITFunction: device_caches, signature, kernel[grid]."""

    device_caches: dict = {}

    def __init__(self, **errors):
        import inspect
        self.signature = inspect.signature(lambda x, n, BLOCK=128, ACT="none": None)
        self.compiled, self.slow, self.errors = [], [], errors

    def __getitem__(self, grid):
        def call(*args, **kw):
            self.slow.append((grid, args, kw))
            self.compiled.append(_FakeCompiled(**self.errors))
            return self.compiled[-1]
        return call


def _fake_triton(monkeypatch, device):
    """A stand-in for what the direct path reads of Triton and torch (launch hooks, the current
    stream and device), and an empty cache; returns (enter hook, exit hook)."""
    import sys
    import types
    from tritonlab.kernels import _launch
    enter, leave = types.SimpleNamespace(calls=[]), types.SimpleNamespace(calls=[])
    runtime = types.SimpleNamespace(launch_enter_hook=enter, launch_exit_hook=leave)
    monkeypatch.setitem(sys.modules, "triton", types.SimpleNamespace(
        knobs=types.SimpleNamespace(runtime=runtime)))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 1000 + device,
                        raising=False)
    monkeypatch.setattr(_launch, "_current_device", lambda: device)
    monkeypatch.setattr(_launch, "_COMPILED", {})
    return enter, leave


def test_launch_cache_calls_the_launcher_like_tritons_jit(monkeypatch):
    """The direct path (GPU only, so checked here with a stand-in for Triton): the first call
    of a key goes through kernel[grid]; later calls reach compiled.run with the grid padded to
    3-D, the current stream, every argument in signature order (defaults filled in), and the
    launch metadata only while a profiler hook listens. Unknown argument types and other
    specialisations take Triton's own path."""
    from tritonlab.kernels import _launch
    enter, leave = _fake_triton(monkeypatch, device=3)
    kernel, t = _FakeKernel(), torch.zeros(16)
    first = _launch.launch(kernel, (4,), t, 32, BLOCK=64)
    assert kernel.slow == [((4,), (t, 32), {"BLOCK": 64})] and first.runs == []
    assert _launch.launch(kernel, (4, 2), t, 32, BLOCK=64) is first
    assert first.runs == [(4, 2, 1, 1003, "function", "packed", None, enter, leave,
                           t, 32, 64, "none")]
    enter.calls.append(print)  # a profiler listens: it gets Triton's launch metadata
    _launch.launch(kernel, (5,), t, 48, BLOCK=64)
    assert first.runs[-1][6] == {"name": "fake_kernel", "grid": (5, 1, 1)}
    assert len(kernel.slow) == 1 and first.handles == 1
    _launch.launch(kernel, (4,), t, 33, BLOCK=64)  # 33 is not a multiple of 16: a new key
    _launch.launch(kernel, (4,), t[1:], 32, BLOCK=64)  # misaligned: a new key
    _launch.launch(kernel, (4,), t, 32, BLOCK=128)  # another constexpr: a new key
    _launch.launch(kernel, (4,), object(), 32)  # unknown type: Triton's path, every time
    _launch.launch(kernel, (4,), object(), 32)
    assert len(kernel.slow) == 6 and len(first.runs) == 2


def test_launch_cache_falls_back_to_tritons_runner(monkeypatch):
    """A Triton whose compiled kernels lack what the direct path calls: compiled[grid](...)."""
    from tritonlab.kernels import _launch
    monkeypatch.setattr(_launch, "_current_device", lambda: 0)
    monkeypatch.setattr(_launch, "_COMPILED", {})
    calls = []

    class Compiled:
        def __getitem__(self, grid):
            return lambda *args: calls.append((grid, args))
    kernel = _FakeKernel()
    kernel.__class__ = type("K", (_FakeKernel,), {"__getitem__": lambda self, grid: (
        lambda *a, **kw: self.slow.append(grid) or Compiled())})
    t = torch.zeros(16)
    _launch.launch(kernel, (4,), t, 32, BLOCK=64)
    _launch.launch(kernel, (7, 2), t, 32, BLOCK=64)
    assert calls == [((7, 2, 1), (t, 32, 64, "none"))] and kernel.slow == [(4,)]


def test_launch_cache_falls_back_when_the_direct_call_does_not_fit(monkeypatch):
    """A Triton whose compiled kernels have what the direct path reads but whose `run` takes
    other arguments (a TypeError, raised before the launch): that call goes once more through
    compiled[grid](...), and so do the later calls of the key."""
    from tritonlab.kernels import _launch
    _fake_triton(monkeypatch, device=0)
    kernel = _FakeKernel(run_errors=[TypeError("function takes exactly 12 arguments (13 given)")])
    t = torch.zeros(16)
    compiled = _launch.launch(kernel, (4,), t, 32, BLOCK=64)
    assert _launch.launch(kernel, (4, 2), t, 32, BLOCK=64) is compiled
    _launch.launch(kernel, (5,), t, 48, BLOCK=64)
    assert compiled.runs == [] and compiled.run_errors == []
    assert compiled.runner_calls == [((4, 2, 1), (t, 32, 64, "none")),
                                     ((5, 1, 1), (t, 48, 64, "none"))]
    assert len(kernel.slow) == 1
    assert [type(hit) for hit in _launch._COMPILED.values()] == [_launch._Runner]


def test_launch_cache_retries_once_and_keeps_driver_errors(monkeypatch):
    """Errors that do not say "another calling convention" propagate: a RuntimeError from the
    driver (the direct path stays), and a second failure, through Triton's runner."""
    from tritonlab.kernels import _launch
    _fake_triton(monkeypatch, device=0)
    t = torch.zeros(16)
    kernel = _FakeKernel(run_errors=[RuntimeError("CUDA error: an illegal memory access")])
    compiled = _launch.launch(kernel, (4,), t, 32, BLOCK=64)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        _launch.launch(kernel, (4,), t, 32, BLOCK=64)
    _launch.launch(kernel, (4,), t, 32, BLOCK=64)
    assert compiled.runner_calls == [] and len(compiled.runs) == 1
    kernel = _FakeKernel(run_errors=[TypeError("run")], runner_errors=[TypeError("runner")])
    compiled = _launch.launch(kernel, (4,), t, 64, BLOCK=64)
    with pytest.raises(TypeError, match="runner"):
        _launch.launch(kernel, (4,), t, 64, BLOCK=64)
    assert len(compiled.runner_calls) == 1 and compiled.runs == []


def test_bound_launch_looks_only_at_alignment_and_device(monkeypatch):
    """A launch plan's `Bound`: its first call goes through `launch` (Triton compiles), later
    calls straight to the compiled kernel with the bound grid and keywords filled in; a
    misaligned tensor, another dtype, another argument type or another current device takes
    `launch`'s full path for that call, and the plan's launches go straight again once the
    arguments fit."""
    from tritonlab.kernels import _launch
    enter, leave = _fake_triton(monkeypatch, device=2)
    kernel, t = _FakeKernel(), torch.zeros(64)
    bound = _launch.Bound(kernel, (4, 2), BLOCK=64)
    first = bound(t, 32)
    assert kernel.slow == [((4, 2), (t, 32), {"BLOCK": 64})] and first.runs == []
    view = t[4:]
    assert bound(view, 32) is None  # straight to the compiled kernel
    assert first.runs == [(4, 2, 1, 1002, "function", "packed", None, enter, leave,
                           view, 32, 64, "none")]
    bound(t[1:], 32)  # misaligned: launch's path, a new specialisation compiled
    assert len(kernel.slow) == 2 and len(first.runs) == 1
    bound(t.double(), 32)  # another dtype: launch's path
    bound(t, 32.0)  # a float where the first call had an int: launch's path
    assert len(kernel.slow) == 4 and len(first.runs) == 1
    monkeypatch.setattr(_launch, "_current_device", lambda: 3)
    bound(t, 32)  # another device: launch's path (its own compiled kernel)
    assert len(kernel.slow) == 5
    monkeypatch.setattr(_launch, "_current_device", lambda: 2)
    bound(t, 32)
    assert len(kernel.slow) == 5 and len(first.runs) == 2


def test_bound_launch_falls_back_when_the_direct_call_does_not_fit(monkeypatch):
    """A `Bound` whose direct call raises a TypeError before the launch hands the call to
    `launch`, which switches the key to Triton's runner; the call runs once."""
    from tritonlab.kernels import _launch
    _fake_triton(monkeypatch, device=0)
    kernel = _FakeKernel(run_errors=[TypeError("function takes exactly 12 arguments")] * 4)
    t = torch.zeros(16)
    bound = _launch.Bound(kernel, (4,), BLOCK=64)
    compiled = bound(t, 32)
    bound(t, 32)
    bound(t, 32)
    assert compiled.runs == [] and len(compiled.runner_calls) == 2 and len(kernel.slow) == 1
    assert isinstance(bound.runner, _launch._Runner) and not isinstance(bound.runner,
                                                                        _launch._Direct)


@pytest.mark.gpu
def test_cached_launches_follow_the_current_stream():
    """A cached launch goes to the stream the caller is on: captured into a CUDA graph on a
    side stream (a launch on another stream would fail the capture), replayed on new data."""
    from tritonlab.kernels import elementwise as ew
    x, y = rand(5000), rand(5000, seed=1)
    ew.add(x, y)  # the first call compiles and fills the cache
    sm.softmax(x.view(50, 100))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = ew.add(x, y)
        soft = sm.softmax(out.view(50, 100))
    x.copy_(rand(5000, seed=2))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert rel_err(soft, torch.softmax((x + y).view(50, 100).double(), -1)) < 1e-6


@pytest.mark.gpu
def test_cached_launches_call_triton_launch_hooks():
    """Profilers (Proton) listen to Triton's launch hooks: cached launches call them too."""
    import triton
    from tritonlab.kernels import elementwise as ew
    x = rand(300)
    ew.add(x, x)
    seen = []

    def hook(metadata):
        seen.append(metadata.get()["name"] if hasattr(metadata, "get") else metadata["name"])
    runtime = triton.knobs.runtime
    chain = runtime.launch_enter_hook
    if hasattr(chain, "add"):
        chain.add(hook)
    else:
        runtime.launch_enter_hook = hook
    try:
        torch.testing.assert_close(ew.add(x, x), 2 * x)
    finally:
        if hasattr(chain, "remove"):
            chain.remove(hook)
        else:
            runtime.launch_enter_hook = chain
    assert seen == ["add_kernel"]


@pytest.mark.gpu
def test_the_installed_triton_takes_the_direct_path():
    """On the Triton this project runs on, cached launches call the compiled kernel's launcher
    directly: the fallback to Triton's runner (for a Triton whose launcher differs) must not
    fire, or every launch silently pays the runner's per-call work again."""
    from tritonlab.kernels import _launch
    from tritonlab.kernels import elementwise as ew
    x = rand(4096, seed=7)
    for _ in range(3):
        torch.testing.assert_close(ew.add(x, x), 2 * x)
    entries = [hit for key, hit in _launch._COMPILED.items() if key[0] == id(ew.add_kernel)]
    assert entries and all(type(hit) is _launch._Direct for hit in entries)
    import triton
    if triton.__version__.startswith("3.6."):  # and Triton's C launcher itself
        assert all(hit.inner is not None for hit in entries)


@pytest.mark.gpu
def test_scratch_buffers_are_per_stream_and_fresh_under_graph_capture():
    """`scratch` hands the same buffer to calls on one stream, another on another stream, and
    a new one while a CUDA graph is captured; rmsnorm's backward, which uses it, gives the
    same gradients on two streams and inside a captured graph."""
    from tritonlab.kernels import _launch
    from tritonlab.kernels import rmsnorm as rn
    dev = torch.device("cuda", torch.cuda.current_device())
    a = _launch.scratch("test", (4, 8), torch.float32, dev)
    assert _launch.scratch("test", (4, 8), torch.float32, dev) is a
    assert _launch.scratch("test", (4, 9), torch.float32, dev) is not a
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert _launch.scratch("test", (4, 8), torch.float32, dev) is not a
    x, g = (t.requires_grad_() for t in (rand(300, 256), rand(256, seed=1)))
    dy = rand(300, 256, seed=2)

    def grads():  # the eager autograd path, which takes its partial-dg rows from `scratch`
        return torch.autograd.grad(rn.rmsnorm(x, g), (x, g), dy)
    want = grads()
    with torch.cuda.stream(side):
        got = grads()
    torch.cuda.synchronize()
    for t, w in zip(got, want):
        torch.testing.assert_close(t, w, rtol=0, atol=0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        assert _launch.scratch("test", (4, 8), torch.float32, dev) is not a
        captured = grads()
    dy.copy_(rand(300, 256, seed=3))
    graph.replay()
    want = grads()
    torch.cuda.synchronize()
    for t, w in zip(captured, want):
        torch.testing.assert_close(t, w, rtol=0, atol=0)


@pytest.mark.gpu
def test_bound_launches_follow_a_changed_dtype_or_argument_type():
    """A `Bound` launch's first call fixes its fast path's signature: tensors of another dtype,
    or a float where an integer was, take Triton's own specialisation, not the bound one."""
    from tritonlab.kernels import _launch
    from tritonlab.kernels import elementwise as ew
    from tritonlab.kernels import rmsnorm as rn
    bound = _launch.Bound(ew.add_kernel, (4,), BLOCK_SIZE=256)
    for dtype in (torch.float32, torch.float16, torch.float32, torch.bfloat16):
        x, y = rand(1024).to(dtype), rand(1024, seed=1).to(dtype)
        out = torch.empty_like(x)
        bound(x, y, out, 1024)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    x, g = rand(64, 256), rand(256, seed=1)
    torch.testing.assert_close(rn.rmsnorm_forward(x, g, 0)[0],
                               torch.nn.functional.rms_norm(x, (256,), g, 0.0))
