"""Kernels whose results depend on the GPU's contraction of `a * b + c` into one fused
multiply-add (Triton compiles with enable_fp_fusion=True). `triton` and `tl` are bound by
`corpus.load(triton, tl, path)`."""
# flake8: noqa: F821 - triton and tl are injected by the loader


@triton.jit
def fusion_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, x * y + x)  # fma(x, y, x)
    tl.store(out_ptr + 1 * BLOCK + offs, x * y - z)  # fma(x, y, -z)
    tl.store(out_ptr + 2 * BLOCK + offs, z - x * y)  # fma(-x, y, z)
    tl.store(out_ptr + 3 * BLOCK + offs, x * y + z * x)  # fma(x, y, round(z * x))
    p = x * y
    tl.store(out_ptr + 4 * BLOCK + offs, p + z + p * 0.5)  # a product with several uses
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(4):
        acc += x * y * k  # the accumulation of a loop
    tl.store(out_ptr + 5 * BLOCK + offs, acc)


@triton.jit
def exp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs)))
