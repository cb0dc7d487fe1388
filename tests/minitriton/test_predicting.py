"""minitriton.predicting (runtime/predicting.py): every launch of a block with its predicted GPU
time, autotuning trials left out, each autotuned kernel's ranking of its configurations; and
`tritonlab predict SCRIPT`, which runs a program under it."""
import dataclasses

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton.runtime.perf_model import launch_of, predict

N = 1 << 16
CONFIGS = [minitriton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 8)]


@minitriton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


tuned_scale = minitriton.autotune(CONFIGS, key=["n"])(scale_kernel)


@minitriton.jit
def tile_dot_kernel(a_ptr, b_ptr, c_ptr, K: tl.constexpr, BM: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + rows[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * K + k[None, :])
    tl.store(c_ptr + rows[:, None] * K + k[None, :], tl.dot(a, b))


def _arrays():
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    return x, np.empty_like(x)


def test_each_launch_is_predicted_and_trials_are_left_out():
    x, y = _arrays()
    with minitriton.record() as everything, minitriton.predicting("H200") as got:
        tuned_scale[lambda m: (N // m["BLOCK"],)](x, y, N)
        scale_kernel[(N // 512,)](x, y, N, BLOCK=512, num_warps=4)
        tuned_scale[lambda m: (N // m["BLOCK"],)](x, y, N)  # tuned already: no trials
    np.testing.assert_array_equal(y, x * 2)  # sample=0: the launches' results are real
    trials = [r for r in everything if r.trial]
    assert len(trials) == 2  # one per BLOCK: warps share a trial
    assert [p.kernel for p in got] == ["scale_kernel"] * 3
    block = tuned_scale.best_config.kwargs["BLOCK"]
    assert [p.grid for p in got] == [(N // block,), (N // 512,), (N // block,)]
    plain = got[1]
    assert plain.config == "BLOCK=512, num_warps=4, num_stages=3"
    assert plain.launch.traffic == 2 * N * 4 and plain.launch.programs == N // 512
    assert plain.launch.bytes == 2 * N * 4  # the arguments' bytes bound the unique bytes
    assert plain.prediction == predict(plain.launch, "H200")
    assert plain.prediction.low < plain.seconds < plain.prediction.high
    assert plain.ranking is None and got[2].ranking is None
    ranking = got[0].ranking
    assert len(ranking) == len(CONFIGS)
    assert [s for _, s in ranking] == sorted(s for _, s in ranking)
    chosen = tuned_scale.best_config
    assert ranking[0][0] == f"BLOCK={chosen.kwargs['BLOCK']}, num_warps={chosen.num_warps}, " \
                            f"num_stages={chosen.num_stages}"
    assert got[0].config.startswith(f"BLOCK={chosen.kwargs['BLOCK']},")
    assert "<- chosen" in str(got[0]) and "autotuned: 4 configurations" in str(got[0])


def test_inside_the_block_the_autotuner_ranks_by_the_model_and_after_it_as_before():
    before = minitriton.current_settings()
    with minitriton.predicting("H100"):
        inside = minitriton.current_settings()
    assert (inside.autotune_rank, inside.autotune_gpu) == ("model", "H100")
    after = minitriton.current_settings()
    assert (after.autotune_rank, after.autotune_gpu) == (before.autotune_rank,
                                                         before.autotune_gpu)


def test_a_sample_of_programs_gives_the_whole_grid_s_counts():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1024, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    predictions = []
    for sample in (0, 4):
        c = np.zeros((1024, 32), np.float32)
        with minitriton.predicting("H200", sample=sample) as got:
            tile_dot_kernel[(1024 // 16,)](a, b, c, K=32, BM=16)
        predictions.append(got[0])
        if sample == 0:
            np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32),
                                       rtol=1e-3, atol=1e-3)
        else:
            assert got[0].record.sampled == (4, 64)
            assert not np.abs(c - a.astype(np.float32) @ b.astype(np.float32)).max() < 1e-3
    full, sampled = predictions
    assert sampled.launch.flops == full.launch.flops == 2 * 1024 * 32 * 32
    assert sampled.launch.traffic == full.launch.traffic
    assert sampled.launch.tile == 16 * 32 and sampled.launch.dot_dtype == "fp16"
    assert sampled.seconds == pytest.approx(full.seconds)


def test_launch_of_is_what_the_prediction_saw():
    x, y = _arrays()
    with minitriton.predicting("H200") as got:
        scale_kernel[(N // 1024,)](x, y, N, BLOCK=1024, num_warps=8, num_stages=2)
    p = got[0]
    again = launch_of(p.record, [], 1024, [], {"num_warps": 8, "num_stages": 2}, 2 * N * 4)
    assert again.num_warps == p.launch.num_warps == 8 and p.launch.num_stages == 2
    assert again.traffic == p.launch.traffic and again.programs == p.launch.programs


def test_a_gpu_without_constants_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="no fitted constants for A100"):
        with minitriton.predicting("A100"):
            raise AssertionError("the block must not run")


@minitriton.jit
def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr, LIBDEVICE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if LIBDEVICE:
        y = tl.extra.libdevice.tanh(x) + tl.sqrt(x * x)  # two special functions a lane
    else:
        y = tl.exp(x) * 3.0  # one; the product is not one
    tl.store(y_ptr + offs, y)


@pytest.mark.parametrize("sample", [0, 4])
@pytest.mark.parametrize("libdevice", [False, True])
def test_special_functions_are_counted_per_lane_and_cost_time(libdevice, sample):
    """exp, sqrt, libdevice's tanh... run on the special-function units (or as libdevice's
    polynomials): the launch counts their lanes, scaled to the grid where only a sample of
    programs ran, and the model adds their time (perf_model: special_rate)."""
    x, y = _arrays()
    with minitriton.predicting("H200", sample=sample) as got:
        exp_kernel[(N // 256,)](x, y, BLOCK=256, LIBDEVICE=libdevice)
    launch = got[0].launch
    assert launch.special == N * (2 if libdevice else 1)
    if not sample:
        want = np.tanh(x) + np.abs(x) if libdevice else np.exp(x) * 3
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    without = predict(dataclasses.replace(launch, special=0), "H200")
    assert got[0].prediction.compute > without.compute


@minitriton.jit
def rows_kernel(x_ptr, w_ptr, y_ptr, n_rows, rows_per_program, N: tl.constexpr,
                TWO_PASS: tl.constexpr):
    cols = tl.arange(0, N)
    w = tl.load(w_ptr + cols)  # the same block in every program: cached, no round
    for i in range(0, rows_per_program):
        row = tl.program_id(0) * rows_per_program + i
        x = tl.load(x_ptr + row * N + cols, mask=row < n_rows, other=0.0)  # a new row
        mean = tl.sum(x, axis=0) / N
        if TWO_PASS:  # a second pass over the row after its statistics: L1/L2 keep it
            x = tl.load(x_ptr + row * N + cols, mask=row < n_rows, other=0.0)
        tl.store(y_ptr + row * N + cols, (x - mean) * w, mask=row < n_rows)


@pytest.mark.parametrize("rows_per_program", [1, 4])
@pytest.mark.parametrize("two_pass", [False, True])
def test_dependent_load_rounds_are_the_rows_a_program_waits_for(rows_per_program, two_pass):
    """A program waits for memory again when it loads new data after a reduction or a store
    (a row loop's next row): ResourceWatcher.rounds; a second pass over the same row and a
    block every program shares add no round; the model charges the rounds' latency."""
    n_rows, n = 64, 128
    x = np.random.default_rng(1).standard_normal((n_rows, n)).astype(np.float32)
    w, y = np.ones(n, np.float32), np.empty_like(x)
    with minitriton.predicting("H200") as got:
        rows_kernel[(n_rows // rows_per_program,)](x, w, y, n_rows, rows_per_program, N=n,
                                                   TWO_PASS=two_pass)
    np.testing.assert_allclose(y, x - x.mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    launch = got[0].launch
    assert launch.rounds == rows_per_program
    one = predict(dataclasses.replace(launch, rounds=1), "H200")
    many = predict(dataclasses.replace(launch, rounds=64), "H200")
    assert many.seconds > one.seconds


def test_times_equal_but_for_the_last_bits_are_ties_the_first_config_wins(monkeypatch):
    """Configurations the model rates alike come out of its float sums different in the last
    bits: rank_key makes them ties, so the autotuner and its ranking keep the configs' order
    (the first wins, as exact ties do), whatever the rounding; a real difference still
    ranks."""
    from minitriton.runtime import autotune, perf_model
    assert perf_model.rank_key(1.898228727210142e-05) == perf_model.rank_key(
        1.898228727210152e-05)
    assert perf_model.rank_key(1.8982e-05) < perf_model.rank_key(1.8983e-05)
    real = autotune.predict

    def noisy(launch, gpu_name):  # 8 warps a hair faster, BLOCK 1024 truly faster
        p = real(launch, gpu_name)
        base = 2e-5 if launch.programs == N // 256 else 1e-5
        return dataclasses.replace(p, seconds=base * (1 - 1e-15 * launch.num_warps))
    monkeypatch.setattr(autotune, "predict", noisy)
    tuned = minitriton.autotune(CONFIGS, key=["n"])(scale_kernel)
    x, y = _arrays()
    with minitriton.predicting("H200") as got:
        tuned[lambda m: (N // m["BLOCK"],)](x, y, N)
    assert (tuned.best_config.kwargs["BLOCK"], tuned.best_config.num_warps) == (1024, 2)
    assert [label for label, _ in got[0].ranking] == [
        "BLOCK=1024, num_warps=2, num_stages=3", "BLOCK=1024, num_warps=8, num_stages=3",
        "BLOCK=256, num_warps=2, num_stages=3", "BLOCK=256, num_warps=8, num_stages=3"]
