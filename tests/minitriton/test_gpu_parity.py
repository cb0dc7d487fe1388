"""minitriton vs real Triton on the GPU: same kernels accepted, same kernels rejected, same values.

Runs only on a machine with a CUDA GPU and triton (`gpu` marker). Each corpus case runs once on
minitriton with CPU tensors and once on Triton with CUDA tensors, from the same inputs.
"""
import pytest
import torch

import minitriton
import minitriton.language as mtl
from corpus import load, make_rng, names, run_case

pytestmark = pytest.mark.gpu

# Transcendentals on the GPU are approximate (ex2.approx, rsqrt.approx...): a few ulp. The GPU
# also contracts a*b + c into one fma (enable_fp_fusion), which minitriton rounds twice: one
# rounding of the product (case_promote's bf16 b*b + b, which cancels for b near -1).
TOLERANCE = {"case_promote": (8e-3, 1e-3), "case_math": (1e-5, 1e-6), "case_softmax": (1e-5, 1e-7),
             "case_reduce": (1e-6, 1e-5), "case_matmul_fp16": (1e-5, 1e-5),
             "case_matmul_bf16_transposed": (1e-5, 1e-5), "case_matmul_fp32_ieee": (1e-5, 1e-5),
             "case_dot_small_n": (1e-6, 1e-6), "case_misc": (1e-6, 1e-5),
             "case_gelu": (1e-5, 1e-6), "case_row_sum": (1e-5, 1e-4),
             "case_rmsnorm_fwd": (1e-5, 1e-6)}


def _real():
    import triton
    import triton.language as tl
    return load(triton, tl)


@pytest.mark.parametrize("name", names("case_"))
def test_same_values(name):
    sim = run_case(load(minitriton, mtl), name, "cpu")
    gpu = run_case(_real(), name, "cuda")
    assert sim.keys() == gpu.keys()
    rtol, atol = TOLERANCE.get(name, (0, 0))
    for key in sim:
        assert sim[key].dtype == gpu[key].dtype, key
        if rtol == 0 or not sim[key].is_floating_point():
            assert torch.equal(sim[key], gpu[key]), (name, key, sim[key], gpu[key])
        else:
            torch.testing.assert_close(sim[key], gpu[key], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", names("bad_"))
def test_same_rejections(name):
    with pytest.raises(Exception):
        getattr(load(minitriton, mtl), name)("cpu", make_rng("cpu"))
    with pytest.raises(Exception):
        getattr(_real(), name)("cuda", make_rng("cuda"))
        torch.cuda.synchronize()
