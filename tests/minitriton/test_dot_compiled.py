"""The compiled exact dot (language/dot_compiled.py, numba: `minitriton[fast]`) gives the bits of
the NumPy reference (language/dot.py) on every dtype and mode: the chains on their own (edge
values, both kernels, threads), the corpus's dot kernels, the fuzzer's dot cases and its
recorded GPU dot outputs. Skipped where numba is not installed (`make test-minitriton` tests
the NumPy-only path)."""
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from corpus import arrays, load, names, run_case
from fuzz import generate_seeded
from fuzz.known import KNOWN
from fuzz.run import Sim, replay, run_one

pytest.importorskip("numba")
dot = importlib.import_module("minitriton.language.dot")
SEEDS = json.loads(Path(__file__).with_name("fuzz_seeds.json").read_text())["seeds"]


def both(fn, *args):
    """fn(*args) with the NumPy reference and with the compiled kernels."""
    with minitriton.configure(dot_engine="numpy"):
        want = fn(*args)
    with minitriton.configure(dot_engine="numba"):
        got = fn(*args)
    return want, got


def same_bits(want, got):
    want, got = np.asarray(want), np.asarray(got)
    assert want.dtype == got.dtype and want.shape == got.shape
    assert want.tobytes() == got.tobytes(), np.argwhere(want != got)[:5]


def _values(rng, shape, bits, exps):
    """Values of `bits` significant bits with exponents in `exps`, zeros sprinkled in."""
    m = rng.integers(1 << (bits - 1), 1 << bits, shape) / 2.0 ** (bits - 1)
    v = m * rng.choice([-1, 1], shape) * np.exp2(rng.integers(exps[0], exps[1] + 1, shape))
    v[rng.random(shape) < 0.1] = 0.0
    return v.astype(np.float32)


@pytest.mark.parametrize("step,bits", [(8, 11), (16, 11), (16, 8), (0, 24), (8, 24)])
@pytest.mark.parametrize("exps", [(-4, 4), (-37, 40), (-60, 60), (-140, -120)])
def test_chains_give_the_reference_bits(step, bits, exps):
    """Both compiled kernels (the fp32 one in the fast range, the float64 one outside it: wide
    exponents, subnormals, 24-bit operands) and the FMA loop of input_precision="ieee"."""
    rng = np.random.default_rng([step, bits, exps[0] + 200, exps[1] + 200])
    for trial in range(8):
        P, M, N, K = 1 + trial % 3, 1 + 7 * (trial % 4), 1 + 5 * (trial % 3), [16, 24, 5, 40][trial % 4]
        x, y = _values(rng, (P, M, K), bits, exps), _values(rng, (P, K, N), bits, exps)
        acc = None
        if trial % 2:
            acc = (rng.standard_normal((P, M, N)) *
                   np.exp2(rng.integers(-120, 120, (P, M, N)))).astype(np.float32)
            acc.flat[0] = -0.0
        if trial == 3:  # infinities and NaNs in operands and accumulator
            x.flat[1], y.flat[-1], acc.flat[-1] = np.inf, -np.inf, np.nan
        with np.errstate(all="ignore"):
            same_bits(*both(dot.mma_chain, x, y, acc, step))


def test_equal_products_and_cancellations():
    rng = np.random.default_rng(3)
    x, y = _values(rng, (2, 8, 16), 11, (-3, 3)), _values(rng, (2, 16, 8), 11, (-3, 3))
    x[0], y[0] = x.flat[0], y.flat[0]  # every term at the top
    y[1, 8:] = -y[1, :8]
    x[1, :, 8:] = x[1, :, :8]  # every step sums to zero
    same_bits(*both(dot.mma_chain, x, y, None, 8))
    same_bits(*both(dot.mma_chain, x, y, np.full((2, 8, 8), 2.0 ** -99, np.float32), 16))


def test_integer_chain_saturates_as_the_reference():
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (3, 8, 96)).astype(np.int32)
    y = rng.integers(-128, 128, (3, 96, 8)).astype(np.int32)
    x[0], y[0] = 127, 127  # the sum passes 2**31 - 1 within a step
    acc = rng.integers(-(1 << 31), 1 << 31, (3, 8, 8)).astype(np.int32)
    same_bits(*both(dot.int_mma_chain, x, y, None))
    same_bits(*both(dot.int_mma_chain, x, y, acc))
    same_bits(*both(dot.int_mma_chain, x[0], y[0], acc[0]))  # no program axis


def test_threads_and_one_program_split_by_rows():
    """Big enough to be cut into slices: of programs, and of one program's rows."""
    rng = np.random.default_rng(5)
    x, y = _values(rng, (32, 64, 64), 11, (-6, 3)), _values(rng, (32, 64, 64), 11, (-6, 3))
    acc = rng.standard_normal((32, 64, 64)).astype(np.float32)
    same_bits(*both(dot.mma_chain, x, y, acc, 8))
    x1, y1 = _values(rng, (1, 512, 64), 24, (-6, 3)), _values(rng, (1, 64, 256), 24, (-6, 3))
    same_bits(*both(dot.mma_chain, x1, y1, None, 8))
    same_bits(*both(dot.mma_chain, x1, y1, None, 0))


@minitriton.jit
def _k_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            LOAD_ACC: tl.constexpr = False, EXPLICIT: tl.constexpr = False):
    """Each program sums its own BM x K @ K x BN product, BK at a time (`acc += tl.dot`, or
    `acc = tl.dot(a, b, acc)` with EXPLICIT), from zeros or (LOAD_ACC) from what c holds."""
    pid = tl.program_id(0)
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a_ptrs = a_ptr + pid * BM * K + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    if LOAD_ACC:
        acc = tl.load(c_ptr + pid * BM * BN + rm[:, None] * BN + rn[None, :])
    else:
        acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        if EXPLICIT:
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        else:
            acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + pid * BM * BN + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("waiting,explicit", [(False, False), (True, False), (False, True)])
def test_chains_summed_behind_the_kernel(waiting, explicit, monkeypatch):
    """`acc += tl.dot` (and `acc = tl.dot(a, b, acc)`) of 2^16 multiply-adds and more runs on
    the chain's thread while the kernel goes on (dot.behind), alone or split when steps wait
    behind it: the same bits."""
    if waiting:  # as if the kernel waited for the chain: its thread splits its dots
        threads = importlib.import_module("minitriton.language.dot_threads")
        monkeypatch.setattr(threads, "_BLOCKED", [10 ** 6])
    behind, started = dot.behind, []
    monkeypatch.setattr(dot, "behind", lambda *a: started.append(behind(*a)) or started[-1])
    rng = np.random.default_rng(11)
    P, BM, BN, K = 8, 64, 64, 128
    a = rng.standard_normal((P * BM, K)).astype(np.float32)
    b = rng.standard_normal((K, BN)).astype(np.float32)

    def run():
        c = np.zeros((P * BM, BN), np.float32)
        _k_loop[(P,)](a, b, c, K, BM=BM, BN=BN, BK=32, EXPLICIT=explicit)
        return c
    want, got = both(run)
    same_bits(want, got)
    assert all(started[-4:]) and not any(started[:-4])  # numba sums behind, NumPy now
    assert not np.array_equal(got, a @ b)  # TF32 sums, not fp32's
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=0.02, atol=0.05)


@pytest.mark.parametrize("start,scale", [("loaded", 1.0), ("-0.0", 1.0), ("1e35", 1.0),
                                         ("loaded", 2.0 ** 50)])
def test_chains_behind_from_any_accumulator(start, scale):
    """The chain's thread sums from operands prepared on the kernel's (dot._fast_operands) and
    from the accumulator it is given: a loaded one; -0.0 lanes and values past the fast range
    (then mma_chain's other paths); operands past it (then no prepared operands): the
    reference's bits every time."""
    rng = np.random.default_rng(5)
    P, BM, BN, K = 4, 64, 64, 128
    a = (rng.standard_normal((P * BM, K)) * scale).astype(np.float32)
    b = rng.standard_normal((K, BN)).astype(np.float32)
    init = rng.standard_normal((P * BM, BN)).astype(np.float32)
    if start != "loaded":  # a few lanes the fast chain does not take
        init[::7, ::5] = float(start)

    def run():
        c = init.copy()
        _k_loop[(P,)](a, b, c, K, BM=BM, BN=BN, BK=32, LOAD_ACC=True)
        return c
    want, got = both(run)
    same_bits(want, got)
    assert not np.array_equal(got, init)


CORPUS = [n for n in names("case_") if "dot" in n or "matmul" in n or "tf32" in n]


@pytest.mark.parametrize("name", CORPUS)
@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
def test_corpus_dot_kernels(name, executor):
    corpus = load(minitriton, tl)
    with minitriton.configure(executor=executor):
        want, got = both(run_case, corpus, name, arrays())
    assert want.keys() == got.keys()
    for key in want:
        same_bits(want[key], got[key])


def _fuzz_dot_cases(count):
    cases, seed = [], 0
    while len(cases) < count:
        case = generate_seeded(700000 + seed, category="dot", avoid=KNOWN)
        seed += 1
        cases.append(case)
    return cases


def test_fuzzer_dot_cases(tmp_path):
    """fp16, bf16, fp32 (tf32, tf32x3, ieee), fp8 and int8 operands, accumulators, out_dtype:
    the fuzzer draws them all."""
    kinds = set()
    for case in _fuzz_dot_cases(40):
        kinds.add(case.category)
        want, got = both(run_one, case, Sim(), tmp_path)
        for key in want:
            same_bits(want[key], got[key])
    assert len(kinds) >= 3, kinds


@pytest.mark.parametrize("entry", [e for e in SEEDS if "dot" in e["case"].get("category", "")],
                         ids=lambda e: str(e["case"].get("cid")))
def test_recorded_gpu_dot_outputs(entry, tmp_path):
    """The fuzzer's regression cases with a dot: the H200's recorded outputs, on numba."""
    with minitriton.configure(dot_engine="numba"):
        assert replay(entry, Sim(), tmp_path) == []


def test_dot_engine_setting():
    with pytest.raises(ValueError, match="dot_engine"):
        minitriton.Settings(dot_engine="fast")
    assert minitriton.Settings.from_env({"MINITRITON_DOT_ENGINE": "NumPy"}).dot_engine == "numpy"



@minitriton.jit
def _fma_kernel(x_ptr, y_ptr, z_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x, y, z = tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)
    tl.store(o_ptr + offs, x * y + z)  # contracted: arith.fma_exact


@pytest.mark.parametrize("dtype,special", [(np.float32, True), (np.float16, True),
                                           ("bfloat16", True), (np.float32, False)])
def test_fma_check_gives_the_reference_bits(dtype, special):
    """fma_exact's sums checked by fma_compiled.count_unlike (one pass) or by NumPy: the same
    bits, with lanes on rounding midpoints and below the normal range among ordinary ones; and
    fp32 blocks without such lanes, summed and rounded by fma_compiled.fma32 in one pass."""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(3)
    n = 1 << 14
    x, y, z = (rng.standard_normal(n).astype(dt) for _ in range(3))
    eps = float(np.finfo(dt).eps)
    if special:
        x[:64] = y[:64] = 1 + 2 * eps  # x * y = 1 + 4 eps + 4 eps^2: a midpoint where z = 0
        z[:64] = 0
        x[64:128] = y[64:128] = float(np.finfo(dt).tiny) ** 0.5 / 4  # products below normals
        z[64:128] = 0
    else:
        z[:100] = -x[:100] * y[:100]  # cancellations (exact zeros and tiny residues)
        x[100:110], z[110:120] = np.inf, np.nan
        np.random.default_rng(5).shuffle(z[:2000])

    def run():
        out = np.zeros(n, dt)
        _fma_kernel[(n // 1024,)](x, y, z, out, BLOCK=1024)
        return out
    want, got = both(run)
    same_bits(want, got)
    with np.errstate(invalid="ignore"):
        exact = x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=2 * eps, atol=1e-30)
    if not special:  # the compiled pass took the whole block (it found no lane to fix)
        arith = importlib.import_module("minitriton.language.arith")
        x, y, z = (v.reshape(-1, 1024)[:4].copy() for v in (x, y, z))  # 4096 lanes
        assert arith._fma32(x, y, z) is not None


def test_count_unlike_counts_what_unlike_marks():
    arith = importlib.import_module("minitriton.language.arith")
    fma = importlib.import_module("minitriton.language.fma_compiled")
    rng = np.random.default_rng(4)
    s = rng.standard_normal(5000)
    s[:10] = 1 + 2.0 ** -23 + 2.0 ** -24  # fp32 midpoints
    s[10:20] = 1e-40
    s[20:30] = [0.0, -0.0, np.nan, np.inf, -np.inf, 2.0 ** -127, -(2.0 ** -130), 1.0, 3.0, 2.0 ** -126]
    for name in ("fp32", "fp16", "bf16"):
        low, tiny = arith._NARROW[name]
        ty = getattr(minitriton.types, {"fp32": "float32", "fp16": "float16",
                                        "bf16": "bfloat16"}[name])
        assert fma.count_unlike(s, np.uint64(64 - low), tiny) == arith._unlike(s, ty).sum()
