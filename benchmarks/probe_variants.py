"""GPU probe: time variants of kernels (RMSNorm backward, matmul tiles, add, a TMA matmul), to
choose defaults.

    python benchmarks/probe_variants.py [rms_bwd|rms_bwd_wide|rms_wide|rms_wide_bwd|
                                         matmul_tiles|matmul_small|descriptor_atomics|add|
                                         matmul_tma ...]
"""
import sys
from pathlib import Path

for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _src))

import torch  # noqa: E402

from tritonlab import backend  # noqa: E402
from tritonlab.kernels import matmul as mm  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402

bench = backend.triton.testing.do_bench
triton = backend.triton


def rms_bwd():
    for dtype in (torch.bfloat16, torch.float32):
        x = torch.randn(8192, 4096, device="cuda", dtype=dtype)
        g = torch.randn(4096, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        _, rstd = rn.rmsnorm_forward(x, g)
        for rows in (1, 2, 4, 8, 16, 32):
            for warps in (4, 8, 16):
                programs = triton.cdiv(8192, rows)
                partial = torch.empty(programs, 4096, device="cuda")
                dx = torch.empty_like(x)

                def run():
                    rn.rmsnorm_bwd_kernel[(programs,)](
                        x, g, rstd, dy, dx, partial, 8192, 4096, rows, BLOCK_SIZE=4096,
                        ACC=backend.tl.float32, num_warps=warps)
                    partial.sum(0)
                ms = bench(run, return_mode="median")
                print(f"rms bwd {str(dtype)[6:]:<9} rows/program {rows:>3} warps {warps:>2}: "
                      f"{ms * 1e3:7.1f} us", flush=True)


def rms_bwd_wide():
    """RMSNorm backward alone (kernel + dg sum), CUDA-graph replays: warps and programs."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for M, N in ((4096, 16384), (8192, 4096), (32768, 1024)):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype)
            g = torch.randn(N, device="cuda", dtype=dtype)
            dy = torch.randn_like(x)
            _, rstd = rn.rmsnorm_forward(x, g)
            dx = torch.empty_like(x)
            for programs in (sms, 2 * sms, 4 * sms):
                rows = triton.cdiv(M, programs)
                partial = torch.empty(triton.cdiv(M, rows), N, device="cuda")
                line = []
                for warps in (4, 8, 16, 32):
                    def run():
                        rn.rmsnorm_bwd_kernel[(partial.shape[0],)](
                            x, g, rstd, dy, dx, partial, M, N, rows, BLOCK_SIZE=N,
                            ACC=backend.tl.float32, num_warps=warps)
                        partial.sum(0)
                    try:
                        ms = triton.testing.do_bench_cudagraph(run, rep=30)
                        line.append(f"w{warps} {ms * 1e3:6.1f}")
                    except Exception as e:  # noqa: BLE001
                        line.append(f"w{warps} {type(e).__name__}")
                print(f"bwd {M}x{N} {str(dtype)[6:]:<9} programs {partial.shape[0]:>4}: "
                      + "  ".join(line), flush=True)


def _timed(out, label, fn, check):
    """Append (CUDA-graph us, label, check()) for fn, or (inf, label, the error's name)."""
    try:
        fn()
        err = check()
        out.append((triton.testing.do_bench_cudagraph(fn, rep=30) * 1e3, label, err))
    except Exception as e:  # noqa: BLE001 - a variant may not compile or fit
        out.append((float("inf"), label, type(e).__name__))


def _report(kind, name, rows, nbytes, best=6):
    rows.sort(key=lambda r: r[0])
    for us, label, err in rows[:best] + [r for r in rows[best:] if "registers" in r[1]]:
        print(f"{kind} {name:<16} {label:<28} {us:8.1f} us {nbytes / us / 1e3:6.0f} GB/s  "
              f"err {err}", flush=True)


def _wide_inputs(N, dtype):
    M = (1 << 26) // N
    x = torch.randn(M, N, device="cuda", dtype=dtype)
    g = torch.randn(N, device="cuda", dtype=dtype)
    return M, x, g, torch.randn_like(x), f"{M}x{N} {str(dtype)[6:]}"


def rms_wide():
    """RMSNorm forward on rows of 4096-65536 columns (2^26 elements), CUDA-graph replays: the
    whole-row-in-registers kernel against the chunked one over chunk and warps."""
    tl = backend.tl
    for N in (4096, 8192, 16384, 32768, 65536):
        for dtype in (torch.bfloat16, torch.float32):
            M, x, g, _, name = _wide_inputs(N, dtype)
            y_ref, rstd = rn._forward(x, g, 1e-6)
            y = torch.empty_like(x)
            rows = []

            def y_err():
                return f"{(y.float() - y_ref.float()).abs().max().item():.1e}"
            warps = rn.num_warps_for(N)
            _timed(rows, f"registers w{warps}", lambda: rn.rmsnorm_fwd_kernel[(M,)](
                x, g, y, rstd, N, 1e-6, BLOCK_SIZE=N, ACC=tl.float32, num_warps=warps), y_err)
            for chunk in (1024, 2048, 4096, 8192):
                for w in (4, 8, 16):
                    if chunk // (32 * w) >= 4 and chunk <= N:
                        _timed(rows, f"chunk {chunk} w{w}", lambda: rn.rmsnorm_fwd_wide_kernel[
                            (M,)](x, g, y, rstd, N, 1e-6, CHUNK=chunk, ACC=tl.float32,
                                  num_warps=w), y_err)
            _report("fwd", name, rows, 2 * M * N * x.element_size())


def rms_wide_bwd():
    """RMSNorm backward on rows of 16384-65536 columns (2^26 elements), CUDA-graph replays:
    the whole-row kernel against the wide-row path (a chunked coefficient pass, then 2-D tiles
    that keep dg per column block) over tile, warps and programs per SM; each checked first."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tl = backend.tl
    for N in (16384, 32768, 65536):
        for dtype in (torch.bfloat16, torch.float32):
            M, x, g, dy, name = _wide_inputs(N, dtype)
            _, rstd = rn._forward(x, g, 1e-6)
            x64 = x.double().requires_grad_()
            g64 = g.double().requires_grad_()
            (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * g64).backward(
                dy.double())
            dx = torch.empty_like(x)
            coef = torch.empty_like(rstd)
            rows = []

            def errors(partial):
                """dx's and dg's relative errors against float64."""
                def rel(a, b):
                    return ((a.double() - b).norm() / b.norm()).item()
                return f"{rel(dx, x64.grad):.1e}/{rel(partial.sum(0), g64.grad):.1e}"
            for per_sm in (1, 2, 4):
                programs = min(M, per_sm * sms)
                rpp = triton.cdiv(M, programs)
                partial = torch.empty(triton.cdiv(M, rpp), N, device="cuda")
                err = lambda part=partial: errors(part)  # noqa: E731
                if N <= 32768:
                    w = rn._bwd_warps(N, x.element_size())
                    _timed(rows, f"registers {per_sm}/SM w{w}", lambda: (
                        rn.rmsnorm_bwd_kernel[(partial.shape[0],)](
                            x, g, rstd, dy, dx, partial, M, N, rpp, BLOCK_SIZE=N,
                            ACC=tl.float32, num_warps=w), partial.sum(0)), err)
            for bm, bn in ((2, 1024), (4, 1024), (8, 512), (4, 2048)):
                for w in (4, 8):
                    for per_sm in (2, 4, 8):
                        col_blocks = triton.cdiv(N, bn)
                        rpp = triton.cdiv(triton.cdiv(M, max(1, per_sm * sms // col_blocks)),
                                          bm) * bm
                        grid = (triton.cdiv(M, rpp), col_blocks)
                        partial = torch.empty(grid[0], N, device="cuda")

                        def run(grid=grid, partial=partial, rpp=rpp, bm=bm, bn=bn, w=w):
                            rn.rmsnorm_bwd_dot_kernel[(M,)](x, g, dy, rstd, coef, N,
                                                            CHUNK=rn.WIDE_CHUNK, ACC=tl.float32,
                                                            num_warps=rn.WIDE_WARPS)
                            rn.rmsnorm_bwd_tiled_kernel[grid](
                                x, g, rstd, coef, dy, dx, partial, M, N, rpp, BLOCK_M=bm,
                                BLOCK_N=bn, ACC=tl.float32, num_warps=w)
                            partial.sum(0)

                        _timed(rows, f"tiles {bm}x{bn} {per_sm}/SM w{w}", run,
                               lambda part=partial: errors(part))
            _report("bwd", name, rows, 3 * M * N * x.element_size())


def matmul_tiles():
    n = 4096
    for dtype in (torch.bfloat16,):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        c = torch.empty(n, n, device="cuda", dtype=dtype)
        ref = bench(lambda: torch.relu(a @ b), return_mode="median")
        print(f"torch relu(a@b) {2 * n ** 3 / ref / 1e9:.0f} TFLOP/s", flush=True)
        for bm, bn, bk, w, s, gm in [(128, 256, 64, 8, 3, 8), (128, 256, 64, 8, 4, 8),
                                     (256, 128, 64, 8, 3, 8), (256, 128, 64, 8, 4, 8),
                                     (128, 128, 64, 8, 4, 8), (128, 256, 32, 8, 4, 8),
                                     (128, 256, 64, 8, 3, 16), (256, 128, 64, 8, 3, 4)]:
            grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
            try:
                ms = bench(lambda: mm.matmul_kernel[grid](
                    a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                    GROUP_M=gm, ACTIVATION="relu", num_warps=w, num_stages=s),
                    return_mode="median")
                print(f"  {bm}x{bn}x{bk} w{w} s{s} g{gm}: {2 * n ** 3 / ms / 1e9:.0f} TFLOP/s",
                      flush=True)
            except Exception as e:  # out of shared memory for some tiles
                print(f"  {bm}x{bn}x{bk} w{w} s{s}: {type(e).__name__}")
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    direct = bench(lambda: mm.matmul_kernel[(64,)](
        a, a, a, 1024, 1024, 1024, 1024, 1, 1024, 1, 1024, 1, BLOCK_M=128, BLOCK_N=128,
        BLOCK_K=64, GROUP_M=8, ACTIVATION="relu", num_warps=8, num_stages=4),
        return_mode="median")
    full = bench(lambda: mm.matmul(a, a, "relu"), return_mode="median")
    torch_t = bench(lambda: torch.relu(a @ a), return_mode="median")
    print(f"1024^3: direct launch {direct * 1e3:.1f} us, mm.matmul {full * 1e3:.1f} us, "
          f"torch {torch_t * 1e3:.1f} us")




def matmul_small():
    """Why a 1024^3 matmul's do_bench time (L2 flushed before each call) can be several times
    its CUDA-graph time: per dtype, in two orders, do_bench against an event-timed loop without
    the flush, the autotuner's choice, and the kernels' GPU durations and the gaps before them
    in a torch.profiler trace of do_bench-like iterations."""
    from torch.profiler import ProfilerActivity, profile
    n = 1024
    inputs = {d: (torch.randn(n, n, device="cuda", dtype=d), torch.randn(n, n, device="cuda",
                                                                       dtype=d))
              for d in (torch.bfloat16, torch.float16)}
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for order in ((torch.bfloat16, torch.float16), (torch.float16, torch.bfloat16)):
        for dtype in order:
            a, b = inputs[dtype]
            for name, fn in (("tritonlab", lambda: mm.matmul(a, b, "relu")),
                             ("torch", lambda: torch.relu(a @ b))):
                fn()
                ms = bench(fn, return_mode="median")
                start, end = torch.cuda.Event(True), torch.cuda.Event(True)
                torch.cuda.synchronize()
                start.record()
                for _ in range(1000):
                    fn()
                end.record()
                torch.cuda.synchronize()
                loop = start.elapsed_time(end)
                with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                    for _ in range(50):
                        flush.zero_()
                        fn()
                    torch.cuda.synchronize()
                kernels = [e for e in prof.events() if e.device_type.name == "CUDA"
                           and "zero" not in e.name.lower() and "fill" not in e.name.lower()]
                durs = sorted(e.device_time for e in kernels)
                plan = mm.matmul_plan(a, b, "relu") if name == "tritonlab" else ""
                print(f"{str(dtype)[6:]:<9} {name:<10} do_bench {ms * 1e3:6.1f} us, loop "
                      f"{loop:6.1f} us/call, kernel time median {durs[len(durs) // 2]:.1f} us "
                      f"(max {durs[-1]:.1f}) over {len(durs)} kernels {plan}", flush=True)


DESC_ATOMIC_CHILD = """
import sys, torch, triton, triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor
om, on, M = map(int, sys.argv[1:])

@triton.jit
def k(d, a_ptr, N, OM: tl.constexpr, ON: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    r, c = tl.arange(0, 8)[:, None], tl.arange(0, 32)[None, :]
    d.atomic_add([pm * 8 + OM, pn * 32 + ON], tl.load(a_ptr + (pm * 8 + r) * N + pn * 32 + c))

t = torch.zeros(M, 64, device="cuda")
k[(4, 2)](TensorDescriptor.from_tensor(t, [8, 32]), torch.ones(32, 64, device="cuda"), 64,
          OM=om, ON=on)
torch.cuda.synchronize()
print("sum", t.sum().item())
"""


def descriptor_atomics():
    """Which window offsets a TMA reduction (`desc.atomic_add`, fp32, 8x32 blocks on a 32x64
    tensor) survives; each case in its own process, since a fault poisons the CUDA context."""
    import subprocess
    import tempfile
    child = Path(tempfile.mkdtemp()) / "descriptor_atomic_child.py"  # @jit needs a source file
    child.write_text(DESC_ATOMIC_CHILD)
    for om, on, m in ((0, 0, 32), (3, 0, 32), (1, 4, 32), (0, 8, 32), (0, 0, 30), (0, 3, 32),
                      (-8, 0, 32), (0, -4, 32), (0, -32, 32)):
        r = subprocess.run([sys.executable, str(child), str(om), str(on), str(m)],
                           capture_output=True, text=True)
        last = [line for line in (r.stdout + r.stderr).splitlines()
                if line.startswith("sum") or "Error" in line]
        print(f"offsets (+{om}, +{on}), tensor {m}x64: rc {r.returncode} "
              f"{last[-1] if last else ''}", flush=True)


def add_variants():
    """Element-wise add at 2^28 fp32: block size, warps and a streaming eviction hint."""
    tl = backend.tl

    @triton.jit
    def add_evict(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, eviction_policy="evict_first")
        y = tl.load(y_ptr + offs, mask=mask, eviction_policy="evict_first")
        tl.store(out_ptr + offs, x + y, mask=mask)

    from tritonlab.kernels import elementwise as ew
    for dtype in (torch.float32, torch.bfloat16):
        n = 1 << 28
        a = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        c = torch.empty_like(a)
        ref = bench(lambda: a + b, return_mode="median")
        print(f"add {str(dtype)[6:]} torch {ref * 1e3:.1f} us", flush=True)
        for kern, name in ((ew.add_kernel, "plain"), (add_evict, "evict_first")):
            for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 8), (8192, 8)):
                ms = bench(lambda: kern[(triton.cdiv(n, block),)](a, b, c, n, BLOCK_SIZE=block,
                                                                   num_warps=warps),
                           return_mode="median")
                print(f"  {name:<12} B{block:<5} w{warps}: {ms * 1e3:.1f} us  {ref / ms:.3f}x",
                      flush=True)


def matmul_tma():
    """Persistent matmul through TMA descriptors against cuBLAS + ReLU."""
    tl = backend.tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def mm_tma(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
               FLATTEN: tl.constexpr):
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_tiles = num_pid_m * num_pid_n
        k_tiles = tl.cdiv(K, BLOCK_K)
        in_group = GROUP_M * num_pid_n
        for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
            group = tile // in_group
            first_m = group * GROUP_M
            size_m = min(num_pid_m - first_m, GROUP_M)
            off_m = (first_m + tile % size_m) * BLOCK_M
            off_n = ((tile % in_group) // size_m) * BLOCK_N
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for ki in range(k_tiles):
                acc = tl.dot(a_desc.load([off_m, ki * BLOCK_K]),
                             b_desc.load([ki * BLOCK_K, off_n]), acc)
            acc = tl.maximum(acc, 0.0)
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for n in (4096, 8192, 1024):
        for dtype in (torch.bfloat16, torch.float16):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            want = torch.relu(a.float() @ b.float())
            ref = bench(lambda: torch.relu(a @ b), return_mode="median")
            ours = bench(lambda: mm.matmul(a, b, "relu"), return_mode="median")
            print(f"{n}^3 {str(dtype)[6:]}: torch relu(a@b) {2 * n ** 3 / ref / 1e9:.0f} TFLOP/s,"
                  f" mm.matmul {2 * n ** 3 / ours / 1e9:.0f} ({ref / ours:.3f}x)", flush=True)
            for bm, bn, bk, w, s, persistent, flat in [
                    (128, 256, 64, 8, 3, True, True), (128, 256, 64, 8, 4, True, True),
                    (128, 256, 64, 8, 3, True, False), (128, 256, 64, 8, 3, False, False),
                    (256, 128, 64, 8, 3, True, True), (128, 128, 64, 8, 4, True, True),
                    (128, 128, 64, 4, 4, True, True), (128, 256, 128, 8, 2, True, True)]:
                tiles = triton.cdiv(n, bm) * triton.cdiv(n, bn)
                progs = min(sms, tiles) if persistent else tiles
                ad = TensorDescriptor.from_tensor(a, [bm, bk])
                bd = TensorDescriptor.from_tensor(b, [bk, bn])
                cd = TensorDescriptor.from_tensor(c, [bm, bn])

                def run():
                    mm_tma[(progs,)](ad, bd, cd, n, n, n, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                     GROUP_M=8, NUM_PROGRAMS=progs, FLATTEN=flat, num_warps=w,
                                     num_stages=s)
                try:
                    run()
                    err = ((c.float() - want).norm() / want.norm()).item()
                    ms = bench(run, return_mode="median")
                    print(f"  tma {bm}x{bn}x{bk} w{w} s{s} persistent={persistent} flat={flat}: "
                          f"{2 * n ** 3 / ms / 1e9:.0f} TFLOP/s {ref / ms:.3f}x  err {err:.1e}",
                          flush=True)
                except Exception as e:  # noqa: BLE001 - shared memory limits for big tiles
                    print(f"  tma {bm}x{bn}x{bk} w{w} s{s}: {type(e).__name__} {str(e)[:80]}")


if __name__ == "__main__":
    probes = {"rms_bwd": rms_bwd, "rms_bwd_wide": rms_bwd_wide, "rms_wide": rms_wide,
              "rms_wide_bwd": rms_wide_bwd,
              "matmul_tiles": matmul_tiles, "matmul_small": matmul_small,
              "descriptor_atomics": descriptor_atomics,
              "add": add_variants,
              "matmul_tma": matmul_tma}
    for name in sys.argv[1:] or probes:
        probes[name]()
