"""Lecture 6 → CS336 assignment 2: FlashAttention-2. Why it exists (the HBM traffic of naive
attention, which writes S and P, against FlashAttention's tiles, which never do), that it is
right (O, L and the gradients against float64), that causal tiles above the diagonal are
skipped, and the dQ race. On a GPU, times against PyTorch eager attention and SDPA too.
"""
import math

import torch

from tritonlab.cli.lecture import lecture_options

lecture_options(__file__, __doc__, writes_files=False)  # first: a bad TRITONLAB_BACKEND is one line

import minitriton  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.kernels import attention as fa  # noqa: E402
from tritonlab.units import format_time  # noqa: E402


sim = backend.with_backend("tritonlab.kernels.attention", "sim")
print(f"kernels run on: {backend.describe()}\n")


def reference(q, k, v, do, causal):
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    o = torch.softmax(s, -1) @ v
    o.backward(do.double())
    return o, torch.logsumexp(s, -1), q.grad, k.grad, v.grad


print("O, L, dQ, dK, dV against float64 attention (max |diff|; fp32 multiplies in TF32):")
for (b, n_q, n_k, d), causal in [((2, 50, 70, 32), False), ((2, 77, 40, 64), True)]:
    q, k, v, do = (torch.randn(b, n, d) for n in (n_q, n_k, n_k, n_q))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o = sim.flash_attention(q, k, v, causal)
    lse = o.grad_fn.saved_tensors[0]
    o.backward(do)
    diffs = [(got.double() - want).abs().max().item()
             for got, want in zip((o, lse, q.grad, k.grad, v.grad),
                                  reference(q.detach(), k.detach(), v.detach(), do, causal))]
    print(f"  {str((b, n_q, n_k, d)):<16} {'causal' if causal else 'full':<7}"
          + "  ".join(f"{name} {x:.1e}" for name, x in zip(("O", "L", "dQ", "dK", "dV"), diffs)))
print()

# --- the traffic: naive attention (S and P through HBM) against FlashAttention's tiles
BM, BN = 64, 64  # the naive kernels' tiles, and FlashAttention's forward on the GPU: 128 x 64
FM, FN = 128, 64
print("HBM traffic of one head's forward, exact counts of the simulator (elements):")
print(f"  {'N':>5} {'d':>4} {'naive':>12} {'model':>12} {'flash':>11} {'model':>11} "
      f"{'causal':>11} {'model':>11}")
for n, d in [(256, 64), (1024, 64), (256, 128)]:
    q, k, v = (torch.randn(1, n, d) for _ in range(3))
    counts = []
    with minitriton.configure(exact_dot=False):  # counts do not depend on how dots round
        for run in (lambda: sim.attention_naive(q, k, v, block_m=BM, block_n=BN),
                    lambda: sim.attention_forward(q, k, v, tiles=(FM, FN, 4, 1)),
                    lambda: sim.attention_forward(q, k, v, True, tiles=(FM, FN, 4, 1))):
            with minitriton.record() as rec:
                run()
            counts.append(rec.elements_read + rec.elements_written)
    models = (fa.naive_traffic(n, d, BM, BN), fa.flash_forward_traffic(n, d, FM, FN),
              fa.flash_forward_traffic(n, d, FM, FN, causal=True))
    assert tuple(counts) == models, (counts, models)
    print(f"  {n:>5} {d:>4} " + " ".join(f"{c:>12,} {m:>12,}" if i == 0 else
                                         f"{c:>11,} {m:>11,}"
                                         for i, (c, m) in enumerate(zip(counts, models))))
print("  the tile model (kernels/attention.py: naive_traffic, flash_forward_traffic) equals the\n"
      "  simulator's counts exactly; the table below is the model, in bf16 bytes per head:\n")

print(f"  {'N':>6} {'d':>4} {'naive':>10} {'flash':>10} {'causal':>10} {'naive/flash':>12}  "
      f"S and P share of naive")
for d in (64, 128):
    for n in (1024, 2048, 4096, 8192, 16384):
        naive = fa.naive_traffic(n, d, BM, BN) * 2
        flash = fa.flash_forward_traffic(n, d, FM, FN) * 2
        causal = fa.flash_forward_traffic(n, d, FM, FN, causal=True) * 2
        print(f"  {n:>6} {d:>4} {naive / 2**20:>8.0f}MB {flash / 2**20:>8.0f}MB "
              f"{causal / 2**20:>8.0f}MB {naive / flash:>11.1f}x  "
              f"{4 * n * n * 2 / naive:>5.0%}")
print("  both grow as N^2: naive moves 4 N^2 for S and P (written, read, written, read) plus\n"
      "  3 N^2 d / 64 for its tiles of Q, K and V; flash moves 2 N^2 d / 128 for K and V and\n"
      "  nothing of size N^2: per N^2, 4 + 3d/64 against d/64 (7x at d = 64, 5x at d = 128)\n")

# --- causal: the tiles above the diagonal are skipped by the loop bounds, not masked
q, k, v = (torch.randn(1, 512, 64) for _ in range(3))
flops = {}
for causal in (False, True):
    with minitriton.configure(exact_dot=False), minitriton.record() as rec:
        sim.attention_forward(q, k, v, causal, tiles=(64, 64, 4, 1))
    flops[causal] = rec.dot_flops
print(f"causal forward, N = 512 in 64 x 64 tiles: tl.dot FLOPs {flops[True]:,} of "
      f"{flops[False]:,} ({flops[True] / flops[False]:.3f} = 36/64: 8 x 9 / 2 tile pairs run)\n")

# --- the backward's dQ: its own kernel, atomics, or a race
q, k, v, do = (torch.randn(1, 64, 32) for _ in range(4))
o, lse = sim.attention_forward(q, k, v)
want = reference(q, k, v, do, False)[2]
with minitriton.configure(races=True):
    dq = sim.attention_backward_atomic(do, q, k, v, o, lse)[0]
    print(f"dQ with tl.atomic_add inside the dK/dV kernel, race sanitizer on: max |diff| "
          f"{(dq - want).abs().max().item():.1e}, no race")
    try:
        sim.attention_backward_racy(do, q, k, v, o, lse, tiles={"dkdv": (16, 16, 4, 1)})
    except minitriton.RaceError as e:
        print("dQ by load-add-store (the racy teaching variant), race sanitizer:")
        print("  " + "\n  ".join(str(e).splitlines()[:3]))
for executor in ("sequential", "lockstep"):
    with minitriton.configure(executor=executor):
        dq = sim.attention_backward_racy(do, q, k, v, o, lse, tiles={"dkdv": (16, 16, 4, 1)})[0]
    print(f"  {executor:<10} executor: max |dQ - true dQ| = {(dq - want).abs().max().item():.2e}")

if backend.NAME == "triton":
    F = torch.nn.functional
    bench = backend.triton.testing.do_bench
    print("\nGPU: (1, 16, N, d) bf16, causal, forward, median (TFLOP/s = 2 N^2 d H: causal,\n"
          "half of 4 N^2 d H); eager attention writes S and P")

    def eager(q, k, v):
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        keep = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        return torch.softmax(s.masked_fill(~keep, float("-inf")), -1) @ v

    for d in (64, 128):
        for n in (1024, 4096, 16384):
            q, k, v = (torch.randn(1, 16, n, d, device="cuda", dtype=torch.bfloat16)
                       for _ in range(3))
            flops = 2 * 16 * n * n * d
            row = []
            for name, fn in [
                    ("eager", eager),
                    ("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                            is_causal=True)),
                    ("ours", lambda q, k, v: fa.flash_attention(q, k, v, True))]:
                try:
                    ms = bench(lambda: fn(q, k, v), return_mode="median")
                    row.append(f"{name} {format_time(ms / 1e3):>9} ({flops / ms / 1e9:4.0f})")
                except torch.cuda.OutOfMemoryError:
                    row.append(f"{name} out of memory")
                    torch.cuda.empty_cache()
            print(f"  N {n:>6} d {d:>3}  " + "   ".join(row))
