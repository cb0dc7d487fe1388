"""Probe: element-wise add at 2^28 elements (fp32, bf16): block size, warps and a streaming
eviction hint, against torch's a + b; do_bench medians.
Decided: docs/decisions.md#add-block-and-eviction."""
from _common import do_bench, dtype_name, tl, torch, triton
from tritonlab.kernels import elementwise as ew

BLOCKS = ((1024, 4), (2048, 4), (2048, 8), (4096, 8), (8192, 8))  # (BLOCK_SIZE, warps)


@triton.jit
def add_evict_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, eviction_policy="evict_first")  # read n
    y = tl.load(y_ptr + offsets, mask=mask, eviction_policy="evict_first")  # read n
    tl.store(out_ptr + offsets, x + y, mask=mask)  # write n


def main():
    n = 1 << 28
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        c = torch.empty_like(a)
        ref = do_bench(lambda: a + b)
        print(f"add {dtype_name(dtype)} torch {ref * 1e3:.1f} us", flush=True)
        for kernel, name in ((ew.add_kernel, "plain"), (add_evict_kernel, "evict_first")):
            for block, warps in BLOCKS:
                ms = do_bench(lambda: kernel[(triton.cdiv(n, block),)](
                    a, b, c, n, BLOCK_SIZE=block, num_warps=warps))
                print(f"  {name:<12} B{block:<5} w{warps}: {ms * 1e3:.1f} us  {ref / ms:.3f}x",
                      flush=True)


if __name__ == "__main__":
    main()
