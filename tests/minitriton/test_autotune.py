"""The autotuner (runtime/autotune.py): every config runs, the choice is the lowest roofline
time on the emulated GPU, one tuning per key, Triton's pruning and hooks, and only the chosen
config's results stay in the outputs."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from tests.minitriton import references as ref


@pytest.fixture(autouse=True)
def rank_by_roofline(request):
    """These tests check the autotuner's mechanics against the roofline's simple numbers; the
    default rank (the performance model) has its own tests below and in test_predicting.py."""
    if "model" in request.node.name:
        yield
        return
    with triton.configure(autotune_rank="roofline"):
        yield


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])  # read BM*K per program
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])  # read K*BN per program
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))  # write BM*BN


@triton.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


def _grid2(meta):
    return (64 // meta["BM"], 64 // meta["BN"])


def _mm_inputs():
    a, b = ref.rand((64, 32)).astype(np.float16), ref.rand((32, 64), seed=1).astype(np.float16)
    return a, b, np.zeros((64, 64), np.float32)


def test_every_config_runs_and_the_lowest_roofline_time_wins():
    configs = [triton.Config({"BM": 16, "BN": 16}), triton.Config({"BM": 64, "BN": 64}),
               triton.Config({"BM": 32, "BN": 32})]
    tuned = triton.autotune(configs, key=["M"])(matmul)
    a, b, c = _mm_inputs()
    tuned[_grid2](a, b, c, 64, 64, 32)
    # bigger tiles re-read A and B fewer times: the least traffic, the shortest roofline
    assert tuned.best_config.kwargs == {"BM": 64, "BN": 64}
    t = {cfg.kwargs["BM"]: ms[0] for cfg, ms in tuned.configs_timings.items()}
    assert t[64] < t[32] < t[16]
    # 64x64 tile: one program reads 64*32 + 32*64 halves and writes 64*64 floats
    assert t[64] == pytest.approx((2 * 64 * 32 * 2 + 64 * 64 * 4) / 3.35e12 * 1e3)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3)
    assert list(tuned.cache) == [(64, "float16", "float16", "float32")]


def test_one_tuning_per_key_and_the_emulated_gpu_is_a_setting():
    calls = []

    def prune(configs, named_args, **kwargs):
        calls.append(named_args["M"])
        return configs
    configs = [triton.Config({"BM": 32, "BN": 32}), triton.Config({"BM": 16, "BN": 16})]
    tuned = triton.autotune(configs, key=["M"], prune_configs_by={"early_config_prune": prune})(
        matmul)
    a, b, c = _mm_inputs()
    with triton.configure(autotune_gpu="H200"):
        tuned[_grid2](a, b, c, 64, 64, 32)
        tuned[_grid2](a, b, c, 64, 64, 32)
    assert calls == [64]
    t = tuned.configs_timings[tuned.best_config][0]
    assert t == pytest.approx((32 * 64 * 2 * 2 * 2 + 64 * 64 * 4) / 4.8e12 * 1e3)
    with pytest.raises(ValueError, match="unknown autotune_gpu"):
        tuned[_grid2](a, b, c, 32, 64, 32, minitriton_settings=triton.Settings(
            autotune_gpu="B300"))


def test_prune_gets_triton_launch_keyword_arguments():
    # Triton's tutorials 06 and 09 read their keyword arguments in early_config_prune
    seen = {}

    def prune(configs, named_args, **kwargs):
        seen.update(kwargs)
        return [c for c in configs if c.kwargs["BM"] <= kwargs["K"]]
    configs = [triton.Config({"BM": 64, "BN": 64}), triton.Config({"BM": 32, "BN": 32})]
    tuned = triton.autotune(configs, key=["M"], prune_configs_by={"early_config_prune": prune})(
        matmul)
    a, b, c = _mm_inputs()
    tuned[_grid2](a, b, c, 64, 64, K=32)
    assert seen["K"] == 32 and "grid" in seen and seen["warmup"] is False
    assert list(tuned.configs_timings) == [configs[1]]


def test_perf_model_keeps_the_top_k():
    configs = [triton.Config({"BM": 16, "BN": 16}), triton.Config({"BM": 32, "BN": 32}),
               triton.Config({"BM": 64, "BN": 64})]
    tuned = triton.autotune(configs, key=["M"], prune_configs_by={
        "perf_model": lambda **kw: kw["BM"], "top_k": 2})(matmul)
    a, b, c = _mm_inputs()
    tuned[_grid2](a, b, c, 64, 64, 32)
    assert [cfg.kwargs["BM"] for cfg in tuned.configs_timings] == [16, 32]


def test_a_broken_config_fails_the_launch_and_leaves_outputs_untouched():
    configs = [triton.Config({"BM": 32, "BN": 32}), triton.Config({"BM": 128, "BN": 128})]
    tuned = triton.autotune(configs, key=["M"])(matmul)
    a, b, c = _mm_inputs()
    with pytest.raises(triton.OutOfBoundsError):
        tuned[lambda meta: (1, 1)](a, b, c, 64, 64, 32)
    assert (c == 0).all()


def test_reset_to_zero_and_only_the_chosen_results_remain():
    x = ref.rand(300)
    configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]
    tuned = triton.autotune(configs, key=["n"], reset_to_zero=["out_ptr"])(accumulate)
    out = np.full(1, 100.0, np.float32)
    tuned[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, out, 300)
    # reset to zero before the chosen run, and the trials' sums do not pile up
    assert out[0] == pytest.approx(x.sum(), rel=1e-5)
    out2 = np.full(1, 100.0, np.float32)
    with pytest.warns(triton.runtime.autotune.InPlaceAutotuneWarning, match="`out_ptr`"):
        triton.autotune(configs, key=["n"])(accumulate)[lambda meta: (triton.cdiv(300, meta[
            "BLOCK"]),)](x, out2, 300)  # a GPU's trials would all add to it
    assert out2[0] == pytest.approx(100 + x.sum(), rel=1e-5)


def test_hooks_and_restore_value_are_called_as_triton_calls_them():
    events = []
    configs = [triton.Config({"BLOCK": 64}, pre_hook=lambda a: events.append(("cfg", a["BLOCK"]))),
               triton.Config({"BLOCK": 128})]
    tuned = triton.autotune(configs, key=["n"], restore_value=["out_ptr"],
                            post_hook=lambda a, exception: events.append(("post", exception)))(
        accumulate)
    x, out = ref.rand(300), np.zeros(1, np.float32)
    tuned[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, out, 300)
    assert events[:3] == [("cfg", 64), ("post", None), ("post", None)]
    assert events[3:] == ([("cfg", 64)] if tuned.best_config is configs[0] else [])
    assert out[0] == pytest.approx(x.sum(), rel=1e-5)


def test_a_single_config_runs_without_tuning():
    tuned = triton.autotune([triton.Config({"BLOCK": 64})], key=["n"])(accumulate)
    out = np.zeros(1, np.float32)
    tuned[lambda meta: (5,)](ref.rand(300), out, 300)
    assert tuned.best_config.kwargs == {"BLOCK": 64} and tuned.cache == {}
    with pytest.raises(ValueError, match="Conflicting meta-parameters"):
        triton.autotune([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                        key=["n"])(accumulate)[(5,)](ref.rand(300), out, 300, BLOCK=64)


@triton.jit
def wide_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _wide_case(M=200, N=136, K=96):
    a = ref.rand((M, K)).astype(np.float16)
    b = ref.rand((K, N), seed=1).astype(np.float16)
    configs = [triton.Config({"BM": bm, "BN": bn, "BK": 32}) for bm, bn in
               ((16, 16), (32, 16), (16, 64), (64, 64), (32, 32), (64, 16))]
    tuned = triton.autotune(configs, key=["M", "N"])(wide_matmul)
    c = np.full((M, N), np.nan, np.float32)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))  # noqa: E731
    return tuned, grid, (a, b, c, M, N, K)


def test_sampling_runs_an_even_sample_of_the_programs():
    from minitriton.runtime.launch import sampling
    x = np.zeros(100, np.float32)

    @triton.jit
    def mark(x_ptr):
        tl.store(x_ptr + tl.program_id(0), 1.0)

    with sampling(7):
        record = mark[(100,)](x)
    assert record.sampled == (7, 100)
    assert np.flatnonzero(x).tolist() == [0, 16, 33, 50, 66, 82, 99]  # round(82.5)
    with sampling(0):
        assert mark[(100,)](x).sampled is None and x.all()


def test_sampled_trials_choose_as_full_trials_and_the_choice_runs_in_full():
    """Masked edges (200x136 in tiles up to 64x64): per-program traffic differs at the edges,
    and the even sample's scaled counts rank the configs as every program's counts do."""
    chosen, timings = {}, {}
    for sample in (0, 16, 4):
        tuned, grid, args = _wide_case()
        with triton.configure(autotune_sample=sample):
            tuned[grid](*args)
        chosen[sample], timings[sample] = tuned.best_config, tuned.configs_timings
        want = ref.f64(args[0]) @ ref.f64(args[1])
        np.testing.assert_allclose(args[2], want, rtol=2e-2, atol=2e-2)  # every program ran
    assert chosen[16] == chosen[0] and chosen[4] == chosen[0]
    for config, (ms, *_) in timings[0].items():
        assert timings[16][config][0] == pytest.approx(ms, rel=0.15)
    assert len({round(t[0], 9) for t in timings[0].values()}) > 3  # a real ranking


@triton.jit
def wait_for_left(flags_ptr, out_ptr):
    """Program i waits until program i-1 has raised its flag: a chain no sample can run."""
    pid = tl.program_id(0)
    if pid > 0:
        while tl.atomic_add(flags_ptr + pid - 1, 0) == 0:
            pass
    tl.store(out_ptr + pid, pid)
    tl.atomic_xchg(flags_ptr + pid, 1)


def test_kernels_that_spin_on_other_programs_get_full_trials():
    flags, out = np.zeros(40, np.int32), np.zeros(40, np.int32)
    configs = [triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)]
    tuned = triton.autotune(configs, key=[], reset_to_zero=["flags_ptr"])(wait_for_left)
    with triton.configure(autotune_sample=4):
        tuned[(40,)](flags, out)
    assert out.tolist() == list(range(40))


def test_autotune_sample_setting():
    assert triton.Settings.from_env({"MINITRITON_AUTOTUNE_SAMPLE": "0"}).autotune_sample == 0
    with pytest.raises(ValueError, match="autotune_sample"):
        triton.Settings(autotune_sample=-1)


def test_configs_that_differ_only_in_warps_and_stages_share_one_trial():
    """The simulated launch does not depend on num_warps or num_stages: one trial stands for
    them all (LaunchRecord.stands_for), and each config's shared memory is still checked with
    its own stages (64x32 + 32x64 halves a stage: 30 stages need 240 KiB, over the H100's)."""
    configs = [triton.Config({"BM": 64, "BN": 64}, num_warps=4, num_stages=2),
               triton.Config({"BM": 64, "BN": 64}, num_warps=8, num_stages=3),
               triton.Config({"BM": 64, "BN": 64}, num_stages=30),
               triton.Config({"BM": 32, "BN": 32}, num_warps=4)]
    tuned = triton.autotune(configs, key=["M"])(matmul)
    a, b, c = _mm_inputs()
    with triton.record() as launches:
        tuned[_grid2](a, b, c, 64, 64, 32)
    records = list(launches)
    trials, final = records[:-1], records[-1]
    assert [r.constexprs["BM"] for r in trials] == [64, 32]  # two trial launches, not four
    assert [r.stands_for for r in trials] == [3, 1] and final.stands_for == 1
    t = {(cfg.kwargs["BM"], cfg.num_stages): ms[0] for cfg, ms in tuned.configs_timings.items()}
    assert t[(64, 2)] == t[(64, 3)] < t[(32, 3)]  # same counts, same roofline time
    assert t[(64, 30)] == float("inf")  # Triton's OutOfResources
    assert tuned.best_config.num_stages in (2, 3) and tuned.best_config.kwargs["BM"] == 64
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3)


def test_the_model_ranks_by_default_and_its_pick_is_its_fastest():
    from minitriton.runtime.perf_model import CONSTANTS
    assert triton.current_settings().autotune_rank == "model"
    assert triton.current_settings().autotune_gpu in CONSTANTS
    configs = [triton.Config({"BM": 16, "BN": 16}, num_warps=1),
               triton.Config({"BM": 64, "BN": 64}, num_warps=4),
               triton.Config({"BM": 32, "BN": 32}, num_warps=2)]
    tuned = triton.autotune(configs, key=["M"])(matmul)
    n = 2048  # enough programs that the tiles' traffic, not the launch, decides
    a, b = ref.rand((n, 32)).astype(np.float16), ref.rand((32, n), seed=1).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    tuned[lambda m: (n // m["BM"], n // m["BN"])](a, b, c, n, n, 32)
    t = {cfg.kwargs["BM"]: ms[0] for cfg, ms in tuned.configs_timings.items()}
    assert tuned.best_config.kwargs["BM"] == min(t, key=t.get)
    assert len(set(t.values())) > 1  # the model tells these tiles apart
    assert t[16] > t[64]  # 16x16 tiles re-read A and B four times as often
    # every time holds at least the launch's fixed cost, which the roofline has not
    assert min(t.values()) >= CONSTANTS["H100"].launch * 1e3
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)
