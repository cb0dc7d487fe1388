"""Probe: the GPU's order of additions in the wider cases that real libraries use (Liger-Kernel's
layer_norm, rms_norm, softmax, cross_entropy: num_warps 16 and 32, rows of 8192..65536
elements), beyond reduce_order.py's blocks of 16..4096 at num_warps 1..8: 1-D rows summed
along axis 0, 2-D [ROWS, COLS] blocks along axis 1 (and 0, and all), sums of arithmetic on a
loaded block (`x - y`: the same layout; `x.to(tl.float32)`: the 16-bit load's layout),
`tl.cumsum`, and sums, reductions and scans of a `tl.dot` result (the MMA accumulator layout:
wgmma on Hopper where M is a multiple of 64 and num_warps of 4, mma.sync otherwise). fp16 and
bf16 (a few fp32) inputs of mixed magnitude, so that the order shows in the bits; `tl.reduce`
with `_hash` (neither commutative nor associative) on the bits names the order itself.

    python benchmarks/probes/reduce_order_wide.py --out DIR   (about 25 s on the H200: 14
                                                               processes compile 83 variants)

writes DIR/reduce_order_wide.npz (every variant's outputs as bits; the inputs are made again
from `inputs`), DIR/reduce_order_wide_digest.npz (`digest` of them: committed as
tests/minitriton/reduce_order_wide.npz) and DIR/reduce_order_wide_ttgir.txt (the layouts
Triton chose: #blocked/#mma lines, each reduce/scan op's operand type, and the PTX of the
variants of PTX_KEPT). tests/minitriton/test_reduce_order.py loads this file with `triton`
and `tl` bound to minitriton and checks minitriton against those digests. Decided:
docs/numerics.md, "Reductions and scans: the GPU's order"."""
import argparse
import multiprocessing
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np

if "triton" not in globals():  # run as a probe (the test's loader binds triton and tl itself)
    from _common import tl, torch, triton

# (dtype, BLOCK, num_warps, masked): Liger's calculate_settings gives 8 warps from 2048, 16
# from 8192, 32 from 32768; also blocks smaller than the threads (256 at 32 warps: replicated)
ROWS = [(dt, n, w, False) for dt in ("float16", "bfloat16") for n, w in
        ((256, 32), (512, 16), (1024, 16), (2048, 16), (4096, 16), (4096, 32), (8192, 8),
         (8192, 16), (8192, 32), (16384, 16), (16384, 32), (32768, 16), (32768, 32),
         (65536, 16), (65536, 32))] + \
       [("float32", n, w, False) for n, w in ((4096, 32), (8192, 16), (65536, 32))] + \
       [("float16", n, w, True) for n, w in ((8192, 16), (65536, 32))]
# (dtype, (ROWS, COLS), num_warps)
TILES = [(dt, s, w) for dt in ("float16", "bfloat16") for s, w in
         (((2, 8192), 16), ((4, 4096), 8), ((4, 4096), 16), ((8, 2048), 32), ((16, 1024), 16),
          ((32, 512), 32), ((64, 256), 16), ((128, 128), 32), ((16, 256), 16),
          ((8, 8192), 32))]
# (M, N, K, num_warps) of fp16 dots: wgmma where M % 64 == 0 and num_warps % 4 == 0
DOTS = [(64, 64, 32, 4), (128, 64, 32, 4), (128, 128, 32, 8), (64, 128, 32, 8),
        (64, 256, 32, 4), (128, 256, 32, 8), (256, 128, 32, 8), (64, 64, 32, 8),
        (128, 128, 32, 16), (16, 64, 32, 4), (32, 32, 32, 2), (64, 64, 32, 2), (32, 64, 32, 4),
        (16, 16, 16, 1)]


@triton.jit
def _hash(a, b):
    return a * 31 + b  # int32, wrapping: neither commutative nor associative


@triton.jit
def _bits(x, BITS: tl.constexpr):
    if BITS == 16:
        return x.to(tl.int16, bitcast=True).to(tl.int32)
    else:
        return x.to(tl.int32, bitcast=True)


@triton.jit
def row_kernel(x_ptr, y_ptr, sum_ptr, diff_ptr, wide_ptr, hred_ptr, csum_ptr, n,
               BLOCK: tl.constexpr, MASKED: tl.constexpr, BITS: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    offs += pid * BLOCK
    if MASKED:
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    else:
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
    tl.store(sum_ptr + pid, tl.sum(x, axis=0))
    tl.store(diff_ptr + pid, tl.sum(x - y, axis=0))
    tl.store(wide_ptr + pid, tl.sum(x.to(tl.float32), axis=0))
    tl.store(hred_ptr + pid, tl.reduce(_bits(x, BITS), 0, _hash))
    tl.store(csum_ptr + offs, tl.cumsum(x, 0), mask=mask)


@triton.jit
def tile_kernel(x_ptr, y_ptr, s1_ptr, s0_ptr, sall_ptr, d1_ptr, h1_ptr, hall_ptr, c1_ptr,
                M: tl.constexpr, N: tl.constexpr, BITS: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    offs = pid * M * N + rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    h = _bits(x, BITS)
    tl.store(s1_ptr + pid * M + rows, tl.sum(x, axis=1))
    tl.store(s0_ptr + pid * N + cols, tl.sum(x, axis=0))
    tl.store(sall_ptr + pid, tl.sum(x))
    tl.store(d1_ptr + pid * M + rows, tl.sum(x - y, axis=1))
    tl.store(h1_ptr + pid * M + rows, tl.reduce(h, 1, _hash))
    tl.store(hall_ptr + pid, tl.reduce(h, None, _hash))
    tl.store(c1_ptr + offs, tl.cumsum(x, 1))


@triton.jit
def dot_kernel(a_ptr, b_ptr, s1_ptr, s0_ptr, sall_ptr, h1_ptr, h0_ptr, hall_ptr, e1_ptr,
               s1h_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """Reductions of a dot result, which keep its MMA layout (the result itself is not
    stored: a store would want it in a blocked layout)."""
    pid = tl.program_id(0)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + pid * M * K + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + pid * K * N + rk[:, None] * N + rn[None, :])
    acc = tl.dot(a, b)  # (M, N) fp32
    h = acc.to(tl.int32, bitcast=True)
    tl.store(s1_ptr + pid * M + rm, tl.sum(acc, axis=1))
    tl.store(s0_ptr + pid * N + rn, tl.sum(acc, axis=0))
    tl.store(sall_ptr + pid, tl.sum(acc))
    tl.store(h1_ptr + pid * M + rm, tl.reduce(h, 1, _hash))
    tl.store(h0_ptr + pid * N + rn, tl.reduce(h, 0, _hash))
    tl.store(hall_ptr + pid, tl.reduce(h, None, _hash))
    tl.store(e1_ptr + pid * M + rm, tl.sum(acc * 0.5 + 1.0, axis=1))  # exact either fused or not
    tl.store(s1h_ptr + pid * M + rm, tl.sum(acc.to(tl.float16), axis=1))


@triton.jit
def dot_scan_kernel(a_ptr, b_ptr, acc_ptr, c1_ptr, c0_ptr, M: tl.constexpr, N: tl.constexpr,
                    K: tl.constexpr):
    """A dot result stored, and scanned along each axis."""
    pid = tl.program_id(0)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + pid * M * K + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + pid * K * N + rk[:, None] * N + rn[None, :])
    acc = tl.dot(a, b)
    offs = pid * M * N + rm[:, None] * N + rn[None, :]
    tl.store(acc_ptr + offs, acc)
    tl.store(c1_ptr + offs, tl.cumsum(acc, 1))
    tl.store(c0_ptr + offs, tl.cumsum(acc, 0))


def inputs(dtype, programs, numel, seed):
    """(programs, numel) values of `dtype` as their bits, from a counter hash (splitmix64): the
    same on any machine. Uniform mantissas in [-1, 1) times 2**e, e in [-4, 4) (16-bit types)
    or [-8, 8) (fp32), so that the order of the additions shows in the rounding."""
    z = np.arange(programs * numel, dtype=np.uint64) + np.uint64(seed) * np.uint64(1 << 32)
    with np.errstate(over="ignore"):
        z = z * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = ((z >> np.uint64(40)).astype(np.float64) / 2.0 ** 23) - 1.0
    span = 8 if dtype == "float32" else 4
    e = ((z >> np.uint64(8)) % np.uint64(2 * span)).astype(np.float64) - span
    x = (u * 2.0 ** e).astype(np.float32).reshape(programs, numel)
    if dtype == "float32":
        return x.view(np.uint32)
    if dtype == "float16":
        return x.astype(np.float16).view(np.uint16)
    return (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16)  # bf16 by truncation


def variants():
    """(kind, dtype, shape, num_warps, masked)."""
    return ([("row", dt, (n,), w, m) for dt, n, w, m in ROWS]
            + [("tile", dt, s, w, False) for dt, s, w in TILES]
            + [(kind, "float16", (m, n, k), w, False) for kind in ("dot", "dotscan")
               for m, n, k, w in DOTS])


def key(v):
    kind, dtype, shape, warps, masked = v
    return f"{kind}_{dtype}_{'x'.join(map(str, shape))}_w{warps}{'_m' if masked else ''}"


def programs_for(numel):
    return int(np.clip(32768 // numel, 2, 16))


class TorchArrays:
    """The variants' arrays as CUDA tensors, for Triton."""

    def __init__(self):
        import torch
        self.torch = torch

    def put(self, bits, dtype):
        t = self.torch.from_numpy(bits.view(np.int16 if bits.itemsize == 2 else np.int32))
        return t.cuda().view(getattr(self.torch, dtype))

    def zeros(self, shape, dtype):
        return self.torch.zeros(shape, device="cuda", dtype=getattr(self.torch, dtype))

    def bits(self, a):
        a = a.cpu()
        if a.dtype.is_floating_point:
            a = a.view(self.torch.int16 if a.element_size() == 2 else self.torch.int32)
        return a.numpy()


def launch(kernels, v, arrays):
    """Run variant v with `kernels` (this module, bound to Triton or to minitriton) on `arrays`
    (`TorchArrays`, or the test's NumPy ones): {output name: its bits, (programs, ...)} and
    what the launch returned."""
    kind, dtype, shape, warps, masked = v
    seed = zlib.crc32(key(v).encode())
    if kind in ("dot", "dotscan"):
        m, n, k = shape
        programs = 2
        a = arrays.put(inputs(dtype, programs, m * k, seed).reshape(-1), dtype)
        b = arrays.put(inputs(dtype, programs, k * n, seed + 1).reshape(-1), dtype)
        f32 = "float32"
        if kind == "dot":
            outs = dict(s1=((m,), f32), s0=((n,), f32), sall=((), f32), h1=((m,), "int32"),
                        h0=((n,), "int32"), hall=((), "int32"), e1=((m,), f32),
                        s1h=((m,), dtype))
            fn = kernels.dot_kernel
        else:
            outs = dict(acc=((m, n), f32), c1=((m, n), f32), c0=((m, n), f32))
            fn = kernels.dot_scan_kernel
        made = {name: arrays.zeros((programs, *s), dt) for name, (s, dt) in outs.items()}
        handle = fn[(programs,)](a, b, *made.values(), M=m, N=n, K=k, num_warps=warps)
    else:
        numel = int(np.prod(shape))
        programs = programs_for(numel)
        x = arrays.put(inputs(dtype, programs, numel, seed).reshape(-1), dtype)
        y = arrays.put(inputs(dtype, programs, numel, seed + 1).reshape(-1), dtype)
        bits = 16 if dtype != "float32" else 32
        if kind == "row":
            outs = dict(sum=((), dtype), diff=((), dtype), wide=((), "float32"),
                        hred=((), "int32"), csum=(shape, dtype))
            made = {name: arrays.zeros((programs, *s), dt) for name, (s, dt) in outs.items()}
            n = shape[0] - 3 if masked else shape[0]
            handle = kernels.row_kernel[(programs,)](x, y, *made.values(), n, BLOCK=shape[0],
                                                     MASKED=masked, BITS=bits, num_warps=warps)
        else:
            m, n = shape
            outs = dict(s1=((m,), dtype), s0=((n,), dtype), sall=((), dtype), d1=((m,), dtype),
                        h1=((m,), "int32"), hall=((), "int32"), c1=(shape, dtype))
            made = {name: arrays.zeros((programs, *s), dt) for name, (s, dt) in outs.items()}
            handle = kernels.tile_kernel[(programs,)](x, y, *made.values(), M=m, N=n,
                                                      BITS=bits, num_warps=warps)
    return {name: arrays.bits(a) for name, a in made.items()}, handle


def digest(result):
    """What the test keeps of a variant's outputs (a small file): each program's bits where
    it has at most 64 of them, else the crc32 of each program's bits (a uint32 per program)."""
    out = {}
    for name, a in result.items():
        a = np.ascontiguousarray(a).reshape(a.shape[0], -1)
        if a.shape[1] <= 64:
            out[name] = a
        else:
            out[name] = np.array([zlib.crc32(row.tobytes()) for row in a], np.uint32)
    return out


PTX_KEPT = ("dot_float16_64x64x32_w4", "dot_float16_32x32x32_w2", "row_float16_8192_w16",
            "tile_float16_8x2048_w32")


def run_variant(v):
    """One variant on the GPU: its bits, the layout lines of its TTGIR, and for the variants
    of PTX_KEPT their PTX."""
    result, compiled = launch(sys.modules[__name__], v, TorchArrays())
    keep = ("#blocked", "#mma", "#linear", "#shared", "#smem")
    ttgir = "\n".join(line.strip()[:400] for line in compiled.asm["ttgir"].splitlines()
                      if line.startswith(keep) or "tt.reduce" in line or "tt.scan" in line
                      or line.strip().startswith("}) : (") or "convert_layout" in line)
    if key(v) in PTX_KEPT:
        ttgir += f"\n-- ptx\n{compiled.asm['ptx']}"
    return result, ttgir


def _worker(batch):
    out = []
    for v in batch:
        try:
            out.append((v, *run_variant(v), ""))
        except Exception as e:  # noqa: BLE001 - a variant that does not compile is a row
            out.append((v, {}, "", f"{type(e).__name__}: {str(e)[:300]}"))
    return out


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--jobs", type=int, default=min(14, os.cpu_count() or 1))
    parser.add_argument("--budget", type=float, default=150,
                        help="seconds; the variants not done by then are left out")
    args = parser.parse_args(list(argv))
    todo = variants()
    todo.sort(key=lambda v: -int(np.prod(v[2])))  # the big ones first: they compile longest
    t0 = time.time()
    results = []
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:  # compile in parallel
        done = pool.imap_unordered(_worker, [[v] for v in todo])
        try:
            for _ in todo:
                results += done.next(timeout=max(args.budget - (time.time() - t0), 0.1))
        except multiprocessing.TimeoutError:
            pass
        pool.terminate()  # the variants still compiling are left out
    arrays, digests, layouts, errors = {}, {}, [], []
    for v, res, ttgir, err in results:
        if err:
            errors.append(f"{key(v)}: {err}")
            continue
        arrays.update({f"{key(v)}/{name}": a for name, a in res.items()})
        digests.update({f"{key(v)}/{name}": a for name, a in digest(res).items()})
        layouts.append(f"== {key(v)}\n{ttgir}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "reduce_order_wide.npz", **arrays)
    np.savez_compressed(out / "reduce_order_wide_digest.npz", **digests)  # the test's file
    (out / "reduce_order_wide_ttgir.txt").write_text("\n".join(layouts) + "\n")
    print(f"reduce_order_wide: {len(results) - len(errors)} of {len(todo)} variants, "
          f"{len(errors)} failed, {time.time() - t0:.0f} s, triton {triton.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    for e in errors:
        print("  ", e, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
