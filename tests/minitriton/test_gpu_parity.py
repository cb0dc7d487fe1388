"""minitriton vs real Triton on the GPU: same kernels accepted, same kernels rejected, same values.

Runs only on a machine with a CUDA GPU and triton (`gpu` marker). Each corpus case runs once on
minitriton with NumPy arrays and once on Triton with CUDA tensors, from the same inputs.
"""
import warnings

import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as mtl
from corpus import PATH, SEMANTICS, arrays, expected_error, load, make_rng, names, run_case

pytestmark = pytest.mark.gpu

# tl.dot is bit-exact (language/dot.py follows the tensor cores' order and truncation).
# Transcendentals on the GPU are approximate (ex2.approx, rsqrt.approx...): a few ulp. The GPU
# contracts a*b + c into one fma in every float type (enable_fp_fusion; minitriton too since
# 2026-12-03, docs/numerics.md); case_promote keeps the tolerance it had when minitriton
# rounded bf16 products twice (up to half a bf16 ulp of b*b, 2**-8 for b near -1).
TOLERANCE = {"case_promote": (8e-3, 4e-3), "case_math": (1e-5, 1e-6), "case_softmax": (1e-5, 1e-7),
             "case_reduce": (1e-6, 1e-5), "case_misc": (1e-6, 1e-5),
             "case_gelu": (1e-5, 1e-6), "case_row_sum": (1e-5, 1e-4),
             "case_rmsnorm_fwd": (1e-5, 1e-6),
             "case_randn": (2e-5, 2e-6),  # Box-Muller's log and cos: approximate on the GPU
             "case_none_and_float_args": (2.4e-7, 0)}  # fp32 `/` is div.full.f32: 2 ulp


def _real(path=PATH):
    import triton
    import triton.language as tl
    return triton, load(triton, tl, path)


@pytest.mark.usefixtures("executor")  # the simulator's side, under each executor
@pytest.mark.parametrize("name", names("case_"))
def test_same_values(name):
    sim = run_case(load(minitriton, mtl), name, arrays())
    gpu = run_case(_real()[1], name, arrays("cuda"))
    assert_same(name, sim, gpu)


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("name", names("case_", SEMANTICS))
def test_same_semantics(name):
    """Python's boolean operators, programs that wait for each other, reads outside the view,
    None and float arguments (corpus/semantics.py): the simulator against the H200."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # block `and` warns in both; outside-view reads here
        sim = run_case(load(minitriton, mtl, SEMANTICS), name, arrays())
        gpu = run_case(_real(SEMANTICS)[1], name, arrays("cuda"))
    assert_same(name, sim, gpu)


def assert_same(name, sim, gpu):
    assert sim.keys() == gpu.keys()
    rtol, atol = TOLERANCE.get(name, (0, 0))
    for key in sim:
        assert sim[key].dtype == gpu[key].dtype, key
        floating = sim[key].dtype.kind == "f" or sim[key].dtype == ml_dtypes.bfloat16
        if rtol == 0 or not floating:
            np.testing.assert_array_equal(sim[key], gpu[key], err_msg=f"{name}: {key}")
        else:
            np.testing.assert_allclose(sim[key].astype(np.float64), gpu[key].astype(np.float64),
                                       rtol=rtol, atol=atol, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("path,name", [(PATH, n) for n in names("bad_")] +
                         [(SEMANTICS, n) for n in names("bad_", SEMANTICS)])
def test_same_rejections(path, name):
    import torch
    with pytest.raises(expected_error(minitriton, name)):
        getattr(load(minitriton, mtl, path), name)(arrays(), make_rng())
    triton, corpus = _real(path)
    with pytest.raises(expected_error(triton, name)):
        getattr(corpus, name)(arrays("cuda"), make_rng())
        torch.cuda.synchronize()
