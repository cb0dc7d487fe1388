"""benchmarks/attention.py's speed summary (no GPU needed): issue 36's bars from the rows of
one run, tutorial 06's forward among them where --tutorial timed it."""
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import attention as bench  # noqa: E402

LABEL, *_ = bench.SPEED_ROWS[0]


def rows(ours_fwd, tutorial=None, tutorial_ws=None):
    """One speed row's timings (ms): ours and cuDNN at the issue's bars, flash slower,
    tutorial 06's forwards where given."""
    times = {("ours", "fwd"): ours_fwd, ("ours", "fwd+bwd"): 8.0,
             ("sdpa-cudnn", "fwd"): 1.0, ("sdpa-cudnn", "fwd+bwd"): 7.5,
             ("sdpa-flash", "fwd"): 3.0, ("sdpa-flash", "fwd+bwd"): 12.0,
             ("tutorial06", "fwd"): tutorial, ("tutorial06-ws", "fwd"): tutorial_ws}
    return [{"label": LABEL, "impl": impl, "pass": which, "status": "ok", "median_ms": ms}
            for (impl, which), ms in times.items() if ms is not None]


def test_the_tutorial_bar_holds_only_where_the_tutorial_ran():
    (entry,) = bench.speed_summary(rows(1.0))
    assert entry["fwd_vs_tutorial06"] is None and entry["issue 36 met"]


@pytest.mark.parametrize("tutorial, tutorial_ws, ratio, met", [
    (1.1, None, 1.1, True),    # ours faster than the tutorial
    (1.1, 0.9, 0.9, False),    # its warp-specialized forward faster than ours: missed
    (None, 1.0, 1.0, True),    # a tie is at least the tutorial's
])
def test_ours_against_the_tutorials_faster_forward(tutorial, tutorial_ws, ratio, met):
    (entry,) = bench.speed_summary(rows(1.0, tutorial, tutorial_ws))
    assert entry["fwd_vs_tutorial06"] == pytest.approx(ratio)
    assert entry["issue 36 met"] is met
    assert f"| {ratio:.2f}x |" in bench.speed_markdown([entry])


def test_the_tutorial_forward_refuses_what_the_tutorial_does_not_run(tmp_path):
    fn = bench.tutorial_forward(object(), False)
    q = torch.zeros(1, 1, 128, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="fp16 only"):
        fn(q, q, q, False)
    with pytest.raises(FileNotFoundError, match="06-fused-attention.py"):
        bench.load_tutorial(tmp_path)


@pytest.mark.parametrize("name", bench.HALF_ONLY_SDPA)
def test_the_half_precision_sdpa_backends_refuse_fp32_in_one_line(name):
    """cuDNN's and flash's SDPA have no fp32 kernel: the row says so in one line instead of
    torch's warning per backend tried; fp16 still reaches SDPA (here on the CPU)."""
    fn = bench.sdpa_forward(name)
    q = torch.zeros(1, 1, 16, 8)
    with pytest.raises(ValueError, match=f"{name} takes fp16 and bf16 only"):
        fn(q, q, q, True)
    h = torch.randn(1, 1, 16, 8, dtype=torch.float64)
    want = torch.nn.functional.scaled_dot_product_attention(h, h, h, is_causal=True)
    got = fn(h.half(), h.half(), h.half(), True)
    assert got.dtype == torch.float16
    torch.testing.assert_close(got.double(), want, atol=2e-3, rtol=2e-3)


def test_rounds_take_turns_over_the_implementations_and_pool_their_times(monkeypatch):
    """measure(): each pass is timed in rounds that alternate between the implementations
    that passed the check (a wrong one and one that raises get a row with the reason); each
    row's quantiles are of all its rounds' times."""
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(1, 2, 16, 8, dtype=torch.float32) for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    eager = bench.eager_attention
    reference = bench.reference_outputs(q, k, v, do, False)

    def broken(q, k, v, causal):
        raise RuntimeError("no kernel for this shape\nsecond line")

    impls = {"a": (eager, None, bench.PASSES), "b": (eager, None, ("fwd",)),
             "wrong": (lambda q, k, v, c: eager(q, k, v, c) * 2, None, bench.PASSES),
             "broken": (broken, None, bench.PASSES)}
    calls = []

    def fake_bench(fn, rep=None):
        fn()  # the call runs: the bwd pass through its kept graph, more than once
        which = len([c for c in calls if c[0] == fn])
        calls.append((fn, rep))
        return [float(len(calls)), 100.0 + which]
    monkeypatch.setattr(bench, "_bench", fake_bench)
    rows = bench.measure(impls, (1, 2, 16, 8), torch.float32, False, reference,
                         (q, k, v, do), rounds=3)
    assert rows["wrong"][0]["status"].startswith("wrong: max rel diff")
    assert rows["broken"] == [dict(rows["broken"][0], status="n/a: RuntimeError: no kernel "
                                                             "for this shape")]
    # fwd: a, b, a, b, a, b; then a's bwd and fwd+bwd three times each
    assert len(calls) == 12 and all(rep == bench.TIMING["rep"] / 3 for _, rep in calls)
    fns = [fn for fn, _ in calls]
    assert fns[0] is not fns[1] and fns[0:2] * 3 == fns[:6]
    assert fns[6] is fns[7] is fns[8] and fns[9] is fns[10] is fns[11] is not fns[6]
    by_pass = {r["pass"]: r for r in rows["a"]}
    assert set(by_pass) == set(bench.PASSES) and [r["pass"] for r in rows["b"]] == ["fwd"]
    fwd_a = [1.0, 100.0, 3.0, 101.0, 5.0, 102.0]
    want = torch.quantile(torch.tensor(fwd_a, dtype=torch.float64),
                          torch.tensor([0.5, 0.2, 0.8], dtype=torch.float64)).tolist()
    assert [by_pass["fwd"][key] for key in ("median_ms", "p20_ms", "p80_ms")] == want
    assert by_pass["fwd"]["rounds"] == 3 and by_pass["bwd"]["status"] == "ok"


def test_the_kept_graph_of_the_bwd_pass_follows_a_forward_and_backward():
    """_calls: where the implementation has a backward, one forward+backward runs before the
    forward whose graph the bwd pass keeps (a training step's steady state: tritonlab's
    native node, not the Python one of a signature's first calls); none for a forward-only."""
    log = []

    class Logged(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            log.append("fwd")
            return x * 2

        @staticmethod
        def backward(ctx, dy):
            log.append("bwd")
            return dy * 2

    def fn(q, k, v, causal):
        return Logged.apply(q) + k + v

    q, k, v, do = (torch.randn(2, 3, requires_grad=i < 3) for i in range(4))
    calls = bench._calls(fn, q, k, v, do, True)
    assert log == ["fwd", "bwd", "fwd"]
    calls["bwd"]()
    assert log[-1] == "bwd" and len(log) == 4
    log.clear()
    bench._calls(fn, q, k, v, do, True, backward=False)
    assert log == ["fwd"]


def table_rows(times, impl="ours"):
    """Assignment-table rows: {(dtype, d, seq): (fwd, bwd, fwd+bwd) ms}."""
    return [{"table": "assignment", "impl": impl, "dtype": dtype, "head_dim": d, "seq": n,
             "pass": which, "status": "ok", "median_ms": ms}
            for (dtype, d, n), passes in times.items()
            for which, ms in zip(bench.PASSES, passes)]


def test_the_baseline_names_every_slower_pass_of_ours_and_only_those():
    """--baseline: ours now against an earlier run's ours, row by row (other implementations'
    rows and rows only one run has are left out); a pass slower than then is named with its
    ratio, an equal one is not; a second list keeps those beyond 3 % (NOISE)."""
    then = table_rows({("bfloat16", 16, 4096): (0.10, 0.50, 0.80),
                       ("bfloat16", 64, 8192): (0.20, 0.40, 0.60),
                       ("float32", 16, 128): (0.05, 0.20, 0.30)})
    then += table_rows({("bfloat16", 16, 4096): (0.01, 0.01, 0.01)}, impl="sdpa-cudnn")
    now = table_rows({("bfloat16", 16, 4096): (0.05, 0.60, 0.80),
                      ("bfloat16", 64, 8192): (0.10, 0.20, 0.30),
                      ("bfloat16", 128, 8192): (9.0, 9.0, 9.0)})
    text, slower = bench.baseline_markdown(now, then)
    assert slower == [("bfloat16", 16, 4096, "bwd", pytest.approx(1.2))]
    assert "| bfloat16 | 16 | 4096 | 0.050 / 0.600 / 0.800 | 0.100 / 0.500 / 0.800 | " \
           "0.50 / 1.20 / 1.00 |" in text
    assert "128" not in text and "float32" not in text
    assert "slower than the baseline: 1 of 2: bfloat16 d=16 4096 bwd 1.20x" in text
    assert "Of them more than 3% slower: bfloat16 d=16 4096 bwd 1.20x" in text
    close = table_rows({("bfloat16", 64, 8192): (0.204, 0.40, 0.60)})  # fwd 1.02x: noise
    text, slower = bench.baseline_markdown(close, then)
    assert [s[:4] for s in slower] == [("bfloat16", 64, 8192, "fwd")]
    assert "Of them more than 3% slower: none" in text
    assert bench.baseline_markdown(then, then)[1] == []
