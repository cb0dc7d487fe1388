"""`triton.profiler` (Proton) under minitriton: host-timed scopes and launches, the .hatchet file
and the viewer's table; and, under the runner, a program that uses proton and
triton.tools.mxfp as Triton's tutorials 09 and 10 do."""
import json
import textwrap

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
import minitriton.profiler as proton
from minitriton import runner
from minitriton.profiler import viewer


@minitriton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)  # r N; w N


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    """Profiles are written to the working directory; every session ends with the test."""
    monkeypatch.chdir(tmp_path)
    yield
    proton.finalize()


def launch():
    x = np.arange(1000, dtype=np.float32)
    scale_kernel[(4,)](x, np.empty_like(x), 1000, BLOCK=256)


def frames(path):
    """{'/'-joined names: metrics} of a profile file."""
    out = {}

    def walk(node, prefix):
        name = prefix + node["frame"]["name"]
        out[name] = node["metrics"]
        for child in node["children"]:
            walk(child, name + "/")
    tree, note = json.loads(path.read_text())
    walk(tree, "")
    return out, note


def test_scopes_and_launches_make_a_frame_tree(tmp_path):
    session = proton.start("prof", hook="triton")
    proton.deactivate(session)
    launch()  # not recorded
    proton.activate(session)
    with proton.scope("outer", {"flops": 1e6}):
        launch()
        launch()
        with proton.scope("inner"):
            launch()
    proton.finalize()
    got, note = frames(tmp_path / "prof.hatchet")
    assert set(got) == {"ROOT", "ROOT/outer", "ROOT/outer/scale_kernel", "ROOT/outer/inner",
                        "ROOT/outer/inner/scale_kernel"}
    assert got["ROOT/outer/scale_kernel"]["count"] == 2
    assert got["ROOT/outer/scale_kernel"]["bytes"] == 2 * 2 * 1000 * 4  # two launches, r+w
    assert got["ROOT/outer"]["flops"] == 1e6 and got["ROOT/outer"]["count"] == 1
    outer = got["ROOT/outer"]["cpu_time (ns)"]
    assert outer >= got["ROOT/outer/scale_kernel"]["cpu_time (ns)"] + \
        got["ROOT/outer/inner"]["cpu_time (ns)"]
    assert got["ROOT"]["cpu_time (ns)"] == outer  # ROOT: the sum of its children
    assert "none of it is GPU time" in note["clock"]


def test_without_the_hook_kernels_have_no_counts(tmp_path):
    proton.start("plain")
    launch()
    proton.finalize()
    got, _ = frames(tmp_path / "plain.hatchet")
    assert got["ROOT/scale_kernel"]["count"] == 1 and "bytes" not in got["ROOT/scale_kernel"]


def test_the_viewer_derives_rates_and_prints_a_table(tmp_path, capsys):
    proton.start("view", hook="triton")
    for _ in range(3):
        with proton.scope("step", {"flops": 2e6}):
            launch()
    proton.finalize()
    tree, metrics = viewer.parse(["gflop/s", "time/ms", "avg_time/us"], "view.hatchet")
    assert metrics == ["gflop/s (host)", "time/ms (host)", "avg_time/us (host)"]
    step = tree.children[0]
    seconds = step.metrics["cpu_time (ns)"] * 1e-9
    assert step.values["gflop/s (host)"] == pytest.approx(6e6 / seconds / 1e9)
    # counts are summed over children: three steps, three kernels under them
    assert step.metrics["count"] == 6
    viewer.print_tree(tree, metrics)
    lines = capsys.readouterr().out.splitlines()
    assert "host wall time" in lines[0]
    assert lines[1].split() == ["gflop/s", "(host)", "time/ms", "(host)", "avg_time/us",
                                "(host)", "name"]
    assert lines[2].endswith("  ROOT") and lines[3].endswith("└─ step")
    assert lines[4].endswith("   └─ scale_kernel")


def test_the_viewer_filters_frames(tmp_path):
    proton.start("filter")
    with proton.scope("keep"):
        launch()
    with proton.scope("drop"):
        launch()
    proton.finalize()

    def names(**filters):
        return [f.name for f in viewer.parse(["count"], "filter.hatchet", **filters)[0].walk()]
    assert names(exclude="dr.p") == ["ROOT", "keep", "scale_kernel"]
    assert names(include="^keep$") == ["ROOT", "keep", "scale_kernel"]
    assert names(threshold=2) == ["ROOT", "keep", "drop"]  # a scope counts its kernel's call


def test_the_viewer_says_what_a_profile_lacks(tmp_path):
    proton.start("lacks")
    launch()
    proton.finalize()
    with pytest.raises(ValueError, match="Metric flops16 is not found in the profile"):
        viewer.parse(["tflop16/s"], "lacks.hatchet")
    with pytest.raises(ValueError, match="util needs GPU peak rates"):
        viewer.parse(["util"], "lacks.hatchet")


def test_scope_as_decorator_and_enter_exit():
    proton.start("calls")

    @proton.scope("decorated")
    def work():
        launch()
    work()
    assert proton.enter_scope("manual") is not None
    with pytest.raises(ValueError, match="Scope name mismatch: other != manual"):
        proton.exit_scope("other")
    proton.finalize()
    assert proton.enter_scope("after") is None  # no session: nothing is recorded


def test_sessions_are_named_by_the_id_start_returned():
    first = proton.start("one")
    second = proton.start("two")
    assert second == first + 1
    proton.deactivate(second)
    with pytest.raises(ValueError, match=f"Session has not been initialized: {second + 1}"):
        proton.activate(second + 1)


@pytest.mark.parametrize("arguments, match", [
    ({"context": "python"}, "records scopes only"),
    ({"data": "trace"}, "frame tree only"),
    ({"backend": "instrumentation"}, "no instrumentation backend"),
    ({"mode": "pcsampling"}, "has no modes"),
    ({"hook": "launch"}, "use hook='triton'"),
])
def test_start_rejects_what_it_cannot_record(arguments, match):
    with pytest.raises(ValueError, match=match):
        proton.start("x", **arguments)


# ----- under the runner, as the tutorials use it

PROGRAM = """
    import numpy as np
    import triton
    import triton.language as tl
    import triton.profiler as proton
    from triton.tools.mxfp import MXFP4Tensor, MXScaleTensor

    @triton.jit
    def mxfp4_matmul(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr,
                     M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 2)
        a = tl.load(a_ptr + rm[:, None] * (K // 2) + rk[None, :])  # (M, K/2): two per byte
        b = tl.load(b_ptr + rn[:, None] * (K // 2) + rk[None, :])  # (N, K/2)
        rs = tl.arange(0, K // 32)
        a_scale = tl.load(a_scale_ptr + rm[:, None] * (K // 32) + rs[None, :])
        b_scale = tl.load(b_scale_ptr + rn[:, None] * (K // 32) + rs[None, :])
        c = tl.dot_scaled(a, a_scale, "e2m1", b.T, b_scale, "e2m1")
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)

    M, N, K = 32, 16, 64
    rng = np.random.default_rng(0)
    a = MXFP4Tensor(rng.choice([-2, -1, 0, 0.5, 1, 3], (M, K)).astype(np.float32))
    b = MXFP4Tensor(rng.choice([-1, 0, 1.5, 4], (N, K)).astype(np.float32))
    a_scale = MXScaleTensor(np.full((M, K // 32), 2.0, np.float32))
    b_scale = MXScaleTensor(rng.choice([0.25, 1.0], (N, K // 32)).astype(np.float32))
    c = np.empty((M, N), np.float32)

    proton.start("mxfp4", hook="triton")
    with proton.scope(f"mxfp4 [M={M}, N={N}, K={K}]", {"flops": 2. * M * N * K}):
        mxfp4_matmul[(1,)](a.to_packed_tensor(dim=1), a_scale.data, b.to_packed_tensor(dim=1),
                           b_scale.data, c, M, N, K)
    proton.finalize()

    scale = lambda s: np.repeat(s.to(np.float32), 32, axis=1)
    reference = (a.to(np.float32) * scale(a_scale)) @ (b.to(np.float32) * scale(b_scale)).T
    assert np.array_equal(c, reference), abs(c - reference).max()

    import triton.profiler.viewer as proton_viewer
    tree, metrics = proton_viewer.parse(["tflop/s", "time/ms"], "mxfp4.hatchet")
    proton_viewer.print_tree(tree, metrics)
"""


def test_a_program_with_proton_and_mxfp_under_the_runner(tmp_path, capsys):
    (tmp_path / "script.py").write_text(textwrap.dedent(PROGRAM))
    assert runner.run(str(tmp_path / "script.py"), []) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["tflop/s", "(host)", "time/ms", "(host)", "name"]
    assert out[3].endswith("└─ mxfp4 [M=32, N=16, K=64]")
    assert out[4].endswith("   └─ mxfp4_matmul")
    got, _ = frames(tmp_path / "mxfp4.hatchet")
    kernel = got["ROOT/mxfp4 [M=32, N=16, K=64]/mxfp4_matmul"]
    assert kernel["flops"] == 2 * 32 * 16 * 64  # the simulator's count of the dot


TORCH_PROGRAM = """
    import torch
    import triton
    import triton.profiler as proton
    from triton.tools.mxfp import MXFP4Tensor, MXScaleTensor

    DEVICE = triton.runtime.driver.active.get_active_torch_device()
    torch.manual_seed(0)
    a = MXFP4Tensor(size=(64, 64), device=DEVICE).random()
    packed = a.to_packed_tensor(dim=1)
    scale = MXScaleTensor(torch.rand(64, 2, device=DEVICE) + 1e-8)
    session = proton.start("torch_side", hook="triton")
    proton.deactivate(session)
    with proton.scope("ref", {"flops": 2. * 64 ** 3}):
        ref = a.to(torch.float32) @ a.to(torch.float32).T
    proton.activate(session)
    with proton.scope("ref", {"flops": 2. * 64 ** 3}):
        ref = a.to(torch.float32) @ a.to(torch.float32).T
    proton.finalize()
    print(type(packed).__name__, packed.dtype, tuple(packed.shape), scale.data.dtype)
"""


def test_the_tutorials_torch_side_under_the_runner(tmp_path, capsys):
    pytest.importorskip("torch")
    (tmp_path / "script.py").write_text(textwrap.dedent(TORCH_PROGRAM))
    assert runner.run(str(tmp_path / "script.py"), []) == 0
    assert capsys.readouterr().out.split() == ["Tensor", "torch.uint8", "(64,", "32)",
                                               "torch.uint8"]
    got, _ = frames(tmp_path / "torch_side.hatchet")
    assert got["ROOT/ref"]["count"] == 1 and got["ROOT/ref"]["flops"] == 2. * 64 ** 3
