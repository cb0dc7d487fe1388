"""How the H200's tensor cores sum a `tl.dot`: dump real Triton's fp32 results of one-tile
dots (fp16, bf16, fp8e4m3, fp32 in tf32 and ieee) over several K and BLOCK_K, with their inputs,
so that accumulation models can be fitted offline (docs/numerics.md, "tl.dot").

    python benchmarks/probes/dot_order.py --out DIR     # writes DIR/dot_order.npz
"""
import argparse
import os

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                PREC: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def _inputs(dtype, K, rng, kind):
    if kind == "wide":  # exponents spread, so that alignment/truncation shows
        a = rng.standard_normal((64, K)) * np.exp2(rng.integers(-6, 6, (64, K)))
        b = rng.standard_normal((K, 64)) * np.exp2(rng.integers(-6, 6, (K, 64)))
    else:
        a, b = rng.standard_normal((64, K)), rng.standard_normal((K, 64))
    ta = torch.tensor(a, dtype=torch.float32).to(dtype)
    tb = torch.tensor(b, dtype=torch.float32).to(dtype)
    return ta, tb


def main(out=None):
    out = out or os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    runs = {}
    cases = [(torch.float16, "ieee"), (torch.bfloat16, "ieee"), (torch.float8_e4m3fn, "ieee"),
             (torch.float32, "tf32"), (torch.float32, "ieee")]
    for dtype, prec in cases:
        for K in (16, 32, 64, 128, 512):
            if dtype == torch.float8_e4m3fn and K < 32:
                continue
            for BK in (16, 32, 64, 128):
                if BK > K or (dtype == torch.float8_e4m3fn and BK < 32):
                    continue
                for kind in ("normal", "wide"):
                    ta, tb = _inputs(dtype, K, rng, kind)
                    c = torch.empty((64, 64), dtype=torch.float32, device="cuda")
                    _dot_kernel[(1,)](ta.cuda(), tb.cuda(), c, K, BM=64, BN=64, BK=BK, PREC=prec)
                    name = f"{str(dtype).split('.')[-1]}_{prec}_K{K}_BK{BK}_{kind}"
                    as_np = (lambda t: t.view(torch.uint8).numpy() if t.element_size() == 1 else
                             t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy())
                    runs[name + "_a"] = as_np(ta)
                    runs[name + "_b"] = as_np(tb)
                    runs[name + "_c"] = c.cpu().numpy()
    path = os.path.join(out, "dot_order.npz")
    np.savez_compressed(path, **runs)
    print(f"{len(runs) // 3} dots written to {path}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    main(p.parse_args().out)
