"""The GPU contracts `a * b + c` into one fused multiply-add (Triton's enable_fp_fusion, on by
default): minitriton rounds such sums once, as the GPU does, and twice where the launch turns
fusion off. Checked against float64 references here and bit for bit against Triton on a GPU."""
import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as mtl
from corpus import PATH, load

FUSION = PATH.with_name("fusion.py")
# One element per thread (128 lanes, 4 warps). At two or more, LLVM packs fp16 and bf16
# products into f16x2 multiplies, and the GPU then leaves a product shared by several sums
# (fusion.py's `x * y`) unfused, which minitriton does not model (docs/numerics.md).
N = 128


def inputs(dtype):
    rng = np.random.default_rng(3)
    return [rng.standard_normal(N).astype(dtype) for _ in range(3)]


def fused_reference(x, y, z):
    """What the GPU computes: each fused sum rounded once from the exact value; where both
    operands are products, the one with fewer uses (`z * x` beside the shared `x * y`)."""
    d = [a.astype(np.float64) for a in (x, y, z)]
    ty = x.dtype
    r = lambda v: v.astype(ty)  # noqa: E731 - one rounding to the kernel's type
    p = r(d[0] * d[1]).astype(np.float64)
    acc = np.zeros(N, ty)
    for k in range(4):
        acc = r(acc.astype(np.float64) + p * k)
    return [r(d[0] * d[1] + d[0]), r(d[0] * d[1] - d[2]), r(d[2] - d[0] * d[1]),
            r(p + d[2] * d[0]), r(r(d[0] * d[1] + d[2]).astype(np.float64) + p * 0.5), acc]


def run(module, arrays, **options):
    x, y, z, out = arrays
    module.fusion_kernel[(1,)](x, y, z, out, BLOCK=N, **options)
    return out


@pytest.mark.usefixtures("executor")
def test_fused_sums_round_once():
    x, y, z = inputs(np.float32)
    out = run(load(minitriton, mtl, FUSION), (x, y, z, np.empty(6 * N, np.float32)))
    for i, want in enumerate(fused_reference(x, y, z)):
        np.testing.assert_array_equal(out[i * N:(i + 1) * N], want, err_msg=f"row {i}")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_fuses_as_fp32_does(dtype):
    """Rows 0-4 (row 5 accumulates an fp16 product in fp32: a cast, nothing to fuse)."""
    x, y, z = inputs(dtype)
    out = run(load(minitriton, mtl, FUSION), (x, y, z, np.empty(6 * N, dtype)))
    for i, want in enumerate(fused_reference(x, y, z)[:5]):
        np.testing.assert_array_equal(out[i * N:(i + 1) * N], want, err_msg=f"row {i}")


@minitriton.jit
def two_products_kernel(x_ptr, y_ptr, z_ptr, w_ptr, out_ptr, BLOCK: mtl.constexpr):
    offs = mtl.arange(0, BLOCK)
    x = mtl.load(x_ptr + offs)
    y = mtl.load(y_ptr + offs)
    z = mtl.load(z_ptr + offs)
    w = mtl.load(w_ptr + offs)
    mtl.store(out_ptr + offs, x * y + z * w)  # one use each: the first is fused
    mtl.store(out_ptr + BLOCK + offs, x * z + y)
    mtl.store(out_ptr + 2 * BLOCK + offs, x * z + y * w)  # x * z has two uses: y * w is fused


@pytest.mark.usefixtures("executor")
def test_a_sum_of_products_fuses_the_one_with_fewer_uses():
    """LLVM's DAG combiner fuses the product with fewer uses (after CSE), the left one where
    they have as many; minitriton counts the uses seen so far (docs/numerics.md)."""
    x, y, z = inputs(np.float32)
    w = np.flip(x).copy()
    out = np.empty(3 * N, np.float32)
    two_products_kernel[(1,)](x, y, z, w, out, BLOCK=N)
    d = [a.astype(np.float64) for a in (x, y, z, w)]
    r = lambda v: v.astype(np.float32).astype(np.float64)  # noqa: E731 - an fp32 rounding
    first = (d[0] * d[1] + r(d[2] * d[3])).astype(np.float32)
    assert (first != (d[2] * d[3] + r(d[0] * d[1])).astype(np.float32)).any()  # they differ
    np.testing.assert_array_equal(out[:N], first)
    np.testing.assert_array_equal(out[2 * N:], (d[1] * d[3] + r(d[0] * d[2])).astype(np.float32))


@minitriton.jit
def later_use_kernel(x_ptr, y_ptr, z_ptr, w_ptr, out_ptr, BLOCK: mtl.constexpr):
    offs = mtl.arange(0, BLOCK)
    x = mtl.load(x_ptr + offs)
    y = mtl.load(y_ptr + offs)
    z = mtl.load(z_ptr + offs)
    w = mtl.load(w_ptr + offs)
    mtl.store(out_ptr + offs, x * y + z * w)  # a tie so far; x * y has a use still to come
    mtl.store(out_ptr + BLOCK + offs, x * y + 1.0)


@pytest.mark.usefixtures("executor")
def test_uses_still_to_come_count_and_the_launch_is_seen_once():
    """LLVM counts a product's uses over the whole kernel: `x * y` is used again after
    `x * y + z * w`, so the GPU fuses `z * w` there (the fuzzer's `shared_product`). The launch
    runs again with the final counts; the record and the watchers see it once."""
    x, y, z = inputs(np.float32)
    w = np.flip(x).copy()
    out = np.empty(2 * N, np.float32)
    with minitriton.record() as records, minitriton.predicting("H200") as seen:
        later_use_kernel[(1,)](x, y, z, w, out, BLOCK=N)
    d = [a.astype(np.float64) for a in (x, y, z, w)]
    r = lambda v: v.astype(np.float32).astype(np.float64)  # noqa: E731 - an fp32 rounding
    gpu = (d[2] * d[3] + r(d[0] * d[1])).astype(np.float32)
    assert (gpu != (d[0] * d[1] + r(d[2] * d[3])).astype(np.float32)).any()  # they differ
    np.testing.assert_array_equal(out[:N], gpu)
    np.testing.assert_array_equal(out[N:], (d[0] * d[1] + 1.0).astype(np.float32))
    assert len(records) == 1 and len(seen) == 1
    assert records[0].bytes_read == 4 * N * 4 and records[0].bytes_written == 2 * N * 4


def test_fusion_off_rounds_the_product_first():
    x, y, z = inputs(np.float32)
    out = run(load(minitriton, mtl, FUSION), (x, y, z, np.empty(6 * N, np.float32)),
              enable_fp_fusion=False)
    np.testing.assert_array_equal(out[:N], x * y + x)
    fused = run(load(minitriton, mtl, FUSION), (x, y, z, np.empty(6 * N, np.float32)))
    assert (fused[:N] != out[:N]).any()  # the inputs are ones where rounding twice shows


@pytest.mark.gpu
@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_same_bits_as_the_gpu(dtype, fusion):
    import torch
    import triton
    import triton.language as tl
    x, y, z = inputs(dtype)
    sim = run(load(minitriton, mtl, FUSION), (x, y, z, np.empty(6 * N, dtype)),
              enable_fp_fusion=fusion)
    gpu_args = [torch.from_numpy(a.view(np.uint16) if dtype == ml_dtypes.bfloat16 else a)
                for a in (x, y, z)]
    if dtype == ml_dtypes.bfloat16:
        gpu_args = [a.view(torch.bfloat16) for a in gpu_args]
    gpu_args = [a.cuda() for a in gpu_args]
    out = torch.empty(6 * N, dtype=gpu_args[0].dtype, device="cuda")
    run(load(triton, tl, FUSION), (*gpu_args, out), enable_fp_fusion=fusion)
    got = out.cpu()
    got = got.view(torch.uint16).numpy().view(ml_dtypes.bfloat16) if dtype == \
        ml_dtypes.bfloat16 else got.numpy()
    np.testing.assert_array_equal(sim, got)


def test_exp_rounds_its_argument_as_the_gpu_does():
    """fp32 exp is ex2.approx(x * log2 e) on the GPU, the product rounded to fp32: for large |x|
    that rounding is several ulp of the result, and minitriton has the same."""
    x = np.linspace(-80, 80, N, dtype=np.float32)
    out = np.empty_like(x)
    load(minitriton, mtl, FUSION).exp_kernel[(1,)](x, out, BLOCK=N)
    product = (x * np.float32(1.4426950408889634)).astype(np.float64)
    np.testing.assert_array_equal(out, np.exp2(product).astype(np.float32))
    ulps = np.abs(out.view(np.int32) - np.exp(x.astype(np.float64)).astype(np.float32)
                  .view(np.int32))
    assert ulps.max() >= 4  # the GPU's error, not NumPy's correctly rounded exp


@pytest.mark.gpu
def test_exp_within_two_ulp_of_the_gpu():
    """What remains is ex2.approx's own error (2 ulp at most, PTX ISA)."""
    import torch
    import triton
    import triton.language as tl
    x = np.linspace(-80, 80, N, dtype=np.float32)
    out = np.empty_like(x)
    load(minitriton, mtl, FUSION).exp_kernel[(1,)](x, out, BLOCK=N)
    gpu = torch.empty(N, device="cuda")
    load(triton, tl, FUSION).exp_kernel[(1,)](torch.from_numpy(x).cuda(), gpu, BLOCK=N)
    ulps = np.abs(out.view(np.int32).astype(np.int64) - gpu.cpu().numpy().view(np.int32))
    assert ulps.max() <= 2, ulps.max()
