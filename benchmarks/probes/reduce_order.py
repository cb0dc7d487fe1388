"""Probe: the order in which Triton combines the elements of `tl.sum`, `tl.max`, `tl.reduce`,
`tl.cumsum` and `tl.associative_scan` on the GPU, for fp16, bf16 and fp32 blocks of 16..4096
elements (1-D, and 2-D along each axis and over all), num_warps 1, 2, 4, 8, with loads that
are plain, masked (`offs < n`, n odd) or masked at an odd runtime row stride (the pointer's
alignment unproven, as in a softmax over rows of n_cols). Each variant's inputs (as the kernel
sees them: masked lanes 0) and outputs go, as raw bits, to `$OUT/reduce_order_{row,tile}.npz`
(`--out DIR`), and the layouts Triton chose to `reduce_order_layouts.txt`. minitriton's order
model (language/reduce.py, scan.py) was fitted to them; tests/minitriton/test_reduce_order.py
replays it. `tl.reduce` and `tl.associative_scan` use `_hash`, a combine that is neither
commutative nor associative, on the inputs' bits, so that their values name the order itself.
Decided: docs/numerics.md#reductions-and-scans-the-gpus-order.

    python benchmarks/probes/reduce_order.py --out DIR   (about 40 s on the H200: 14 processes
                                                          compile the 612 variants)

The kernels (and `dot_kernel`, a sum or scan of a product alone) are shared with that test,
which loads this file with `triton` and `tl` bound to minitriton or to Triton
(tests/minitriton/corpus `load`), and runs `launch` on both."""
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

DTYPES = ("float16", "bfloat16", "float32")
WARPS = (1, 2, 4, 8)
ROW_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
TILES = ((2, 16), (16, 2), (4, 4), (16, 16), (8, 64), (64, 8), (32, 32), (4, 256), (256, 4),
         (16, 128), (128, 16), (64, 64))
MODES = (0, 1, 2)  # plain; masked `offs < n`, n odd; rows at an odd runtime stride n, masked


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
def _narrow(h, BITS: tl.constexpr):
    """Scanned hashes stored as wide as the input: an int32 store of a 16-bit input's scan
    would give the scan the int32 store's layout (4 per thread instead of 8)."""
    if BITS == 16:
        return h.to(tl.int16)
    else:
        return h


@triton.jit
def row_kernel(x_ptr, sum_ptr, max_ptr, hred_ptr, sq_ptr, csum_ptr, rcsum_ptr, hscan_ptr,
               csq_ptr, n, stride, BLOCK: tl.constexpr, MASKED: tl.constexpr,
               STRIDED: tl.constexpr, BITS: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    if STRIDED:  # the outputs too: a store at an aligned address would give its layout
        offs += pid * stride
    else:
        offs += pid * BLOCK
    if MASKED:
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    else:
        x = tl.load(x_ptr + offs)
    h = _bits(x, BITS)
    tl.store(sum_ptr + pid, tl.sum(x, 0))
    tl.store(max_ptr + pid, tl.max(x, 0))
    tl.store(hred_ptr + pid, tl.reduce(h, 0, _hash))
    tl.store(sq_ptr + pid, tl.sum(x * x, 0))  # fp32: the products fused into the adds
    tl.store(csum_ptr + offs, tl.cumsum(x, 0), mask=mask)
    tl.store(rcsum_ptr + offs, tl.cumsum(x, 0, reverse=True), mask=mask)
    tl.store(hscan_ptr + offs, _narrow(tl.associative_scan(h, 0, _hash), BITS), mask=mask)
    tl.store(csq_ptr + offs, tl.cumsum(x * x, 0), mask=mask)


@triton.jit
def tile_kernel(x_ptr, s0_ptr, s1_ptr, sall_ptr, h0_ptr, h1_ptr, hall_ptr, sq0_ptr, sq1_ptr,
                c0_ptr, c1_ptr, hs0_ptr, hs1_ptr, csq0_ptr, n, stride, M: tl.constexpr,
                N: tl.constexpr, MASKED: tl.constexpr, STRIDED: tl.constexpr,
                BITS: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    mask = (rows[:, None] < M) & (cols[None, :] < n)
    if STRIDED:
        offs = pid * M * stride + rows[:, None] * stride + cols[None, :]
    else:
        offs = pid * M * N + rows[:, None] * N + cols[None, :]
    if MASKED:
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    else:
        x = tl.load(x_ptr + offs)
    h = _bits(x, BITS)
    tl.store(s0_ptr + pid * N + cols, tl.sum(x, 0))
    tl.store(s1_ptr + pid * M + rows, tl.sum(x, 1))
    tl.store(sall_ptr + pid, tl.sum(x))
    tl.store(h0_ptr + pid * N + cols, tl.reduce(h, 0, _hash))
    tl.store(h1_ptr + pid * M + rows, tl.reduce(h, 1, _hash))
    tl.store(hall_ptr + pid, tl.reduce(h, None, _hash))
    tl.store(sq0_ptr + pid * N + cols, tl.sum(x * x, 0))
    tl.store(sq1_ptr + pid * M + rows, tl.sum(x * x, 1))
    tl.store(c0_ptr + offs, tl.cumsum(x, 0), mask=mask)
    tl.store(c1_ptr + offs, tl.cumsum(x, 1), mask=mask)
    tl.store(hs0_ptr + offs, _narrow(tl.associative_scan(h, 0, _hash), BITS), mask=mask)
    tl.store(hs1_ptr + offs, _narrow(tl.associative_scan(h, 1, _hash), BITS), mask=mask)
    tl.store(csq0_ptr + offs, tl.cumsum(x * x, 0), mask=mask)


@triton.jit
def dot_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
               SCAN: tl.constexpr):
    """One sum or scan of a product, alone (LLVM fuses the multiplications into the adds by
    the products' uses: with a second reduction of the same product it fuses others)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    p = tl.load(x_ptr + pid * M * N + offs) * tl.load(y_ptr + pid * M * N + offs)
    if SCAN:
        tl.store(out_ptr + pid * M * N + offs, tl.cumsum(p, AXIS))
    elif AXIS == 0:
        tl.store(out_ptr + pid * N + tl.arange(0, N), tl.sum(p, 0))
    else:
        tl.store(out_ptr + pid * M + tl.arange(0, M), tl.sum(p, 1))


def inputs(dtype, programs, numel, seed):
    """(programs, numel) values of `dtype` ("float16"...) as their bits, from a counter hash
    (splitmix64): the same on any machine and NumPy. Uniform mantissas in [-1, 1) times
    2**e, e in [-4, 4) for 16-bit types and [-8, 8) for fp32, so that the order of the
    additions shows in the rounding."""
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
    """(kind, dtype, shape, num_warps, mode), rows first: every row size in every mode; the
    tiles plain for every dtype, masked for fp32, at an odd stride for fp32 and fp16."""
    tile_modes = {"float32": MODES, "float16": (0, 2), "bfloat16": (0,)}
    rows = [("row", dtype, (numel,), warps, mode) for dtype in DTYPES for warps in WARPS
            for numel in ROW_SIZES for mode in MODES]
    return rows + [("tile", dtype, tile, warps, mode) for dtype in DTYPES for warps in WARPS
                   for tile in TILES for mode in tile_modes[dtype]]


def key(v):
    kind, dtype, shape, warps, mode = v
    return f"{kind}_{dtype}_{'x'.join(map(str, shape))}_w{warps}_m{mode}"


def geometry(shape, mode):
    """(n, row stride, masked) of a variant: the mask bound on the last dim, the stride of
    the block's rows in the input, and whether the load is masked."""
    last = shape[-1]
    odd = max(last - 3, 3) | 1
    return ((last, last, False), (odd, last, True), (odd, odd, True))[mode]


def programs_for(numel):
    return int(np.clip(4096 // numel, 4, 128))


def layout_input(bits, shape, mode):
    """The input buffer of a variant, its rows at the variant's stride (the block outputs are
    stored alike), and the index of each element of each program's block in it:
    (buffer, (programs, *shape) indices, the (programs, *shape) bits loaded, masked lanes 0)."""
    n, stride, _ = geometry(shape, mode)
    programs = bits.shape[0]
    rows = int(np.prod(shape[:-1], dtype=np.int64)) * programs
    last = shape[-1]
    index = np.arange(rows)[:, None] * stride + np.arange(last)[None, :]
    buf = np.zeros(rows * stride + last, bits.dtype)
    live = np.arange(last) < min(stride, last)
    buf[index[:, live]] = bits.reshape(rows, last)[:, live]
    seen = buf[index]
    seen[:, np.arange(last) >= n] = 0
    return buf, index.reshape(programs, *shape), seen.reshape(programs, *shape)


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
    """Run variant v with `kernels` (this module, bound to Triton or to minitriton) on
    `arrays` (`TorchArrays`, or the test's NumPy ones): its inputs (the block each program
    loads, masked lanes 0) and outputs as bits, and what the launch returned."""
    kind, dtype, shape, warps, mode = v
    numel = int(np.prod(shape))
    programs = programs_for(numel)
    bits = inputs(dtype, programs, numel, zlib.crc32(key(v).encode()))
    buf, index, seen = layout_input(bits, shape, mode)
    n, stride, masked = geometry(shape, mode)
    x = arrays.put(buf, dtype)
    hdt = "int16" if bits.itemsize == 2 else "int32"

    def block(dt=dtype):  # a block output, laid out like the input
        return arrays.zeros(buf.size, dt)

    def one(*size, dt=dtype):
        return arrays.zeros((programs, *size), dt)
    options = dict(MASKED=masked, STRIDED=mode == 2, BITS=8 * bits.itemsize, num_warps=warps)
    if kind == "row":
        outs = dict(sum=one(), max=one(), hred=one(dt="int32"), sq=one(), csum=block(),
                    rcsum=block(), hscan=block(hdt), csq=block())
        handle = kernels.row_kernel[(programs,)](x, *outs.values(), n, stride, BLOCK=numel,
                                                 **options)
    else:
        m_, n_ = shape
        outs = dict(s0=one(n_), s1=one(m_), sall=one(), h0=one(n_, dt="int32"),
                    h1=one(m_, dt="int32"), hall=one(dt="int32"), sq0=one(n_), sq1=one(m_),
                    c0=block(), c1=block(), hs0=block(hdt), hs1=block(hdt), csq0=block())
        handle = kernels.tile_kernel[(programs,)](x, *outs.values(), n, stride, M=m_, N=n_,
                                                  **options)
    result = {"x": seen, "n": np.int64(n)}
    kept = max(1, 1024 // numel)  # programs whose block outputs are kept: small files
    for name, a in outs.items():
        a = arrays.bits(a)
        result[name] = a[index][:kept] if a.ndim == 1 and a.size == buf.size else a
    return result, handle


def run_variant(*v):
    """One variant on the GPU: its bits and the layout lines of its TTGIR."""
    result, compiled = launch(sys.modules[__name__], v, TorchArrays())
    ttgir = "\n".join(line.strip()[:200] for line in compiled.asm["ttgir"].splitlines()
                      if line.startswith("#blocked") or line.strip().startswith("}) : ("))
    return result, ttgir


def _worker(batch):
    out = []
    for v in batch:
        try:
            out.append((v, *run_variant(*v), ""))
        except Exception as e:  # noqa: BLE001 - a variant that does not compile is a row
            out.append((v, {}, "", f"{type(e).__name__}: {str(e)[:300]}"))
    return out


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--jobs", type=int, default=min(14, os.cpu_count() or 1))
    parser.add_argument("--budget", type=float, default=110,
                        help="seconds; the variants not done by then are left out")
    args = parser.parse_args(list(argv))
    todo = variants()
    t0 = time.time()
    results = []
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:  # compile in parallel
        done = pool.imap_unordered(_worker, [todo[k:k + 4] for k in range(0, len(todo), 4)])
        try:
            for _ in range(0, len(todo), 4):
                results += done.next(timeout=max(args.budget - (time.time() - t0), 0.1))
        except multiprocessing.TimeoutError:
            pass
        pool.terminate()  # the variants still compiling are left out
    arrays = {"row": {}, "tile": {}}
    layouts, errors = [], []
    for v, res, ttgir, err in results:
        if err:
            errors.append(f"{key(v)}: {err}")
            continue
        arrays[v[0]].update({f"{key(v)}/{name}": a for name, a in res.items()})
        layouts.append(f"== {key(v)}\n{ttgir}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for kind, arrs in arrays.items():
        np.savez_compressed(out / f"reduce_order_{kind}.npz", **arrs)
    (out / "reduce_order_layouts.txt").write_text("\n".join(layouts) + "\n")
    print(f"reduce_order: {len(results) - len(errors)} of {len(todo)} variants, "
          f"{len(errors)} failed, {time.time() - t0:.0f} s, triton {triton.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    for e in errors:
        print("  ", e, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
