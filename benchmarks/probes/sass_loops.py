"""Attention's tl kernels' loops as the GPU would run them, read on a CPU: the backward's dK/dV
and dQ kernels (kernels/attention.py; --tma: their TMA form; dkdv_atomic: the one pass's), and
the pointer forward (fwd), compiled by real Triton for sm_90 at every config of the Hopper
tuning, and for each launch its registers, spilled stack and, per loop
of its SASS, the instructions, the wgmma (HGMMA) and the waits on them (WARPGROUP.DEPBAR).
A loop with as many waits as wgmma runs its dots one at a time: each waits for the one
before, where chained dots of one accumulator need one wait.

    python benchmarks/probes/sass_loops.py --triton DIR [--src CHECKOUT] [--dims 16,64]
        [--dtypes bf16,fp32] [--seq 32768] [--kernels dkdv,dq] [--tma] [--out FILE.json]
        [--check] [--quiet]

DIR holds Triton's Linux wheel (`pip install --no-deps --target DIR triton==3.6.0`: it compiles
without a GPU); --src another checkout's tree (a baseline: run twice and compare). The launches
are the table's: batch 1, one head, contiguous (batch, heads, seq, d), `seq` queries and keys,
causal and not (not: head dims from 64), the tail loops left out where the tuning leaves
them. Found with it (2026-12-07): dQ's loop waited after every wgmma in causal 16-bit
launches while each step offset its pointers from row 0; stepping them a tile at a time
chains them (docs/attention.md, "The dQ loop's waits"). Still so (no 16-bit defaults): the
one pass's dK/dV at BLOCK_M 32, d = 64 and 128, not causal; the TMA form's dQ at d = 16, 64x16
on 4 warps, causal."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import compile_check  # noqa: E402 - the sm_90 compile helpers, shared
# "dkdv_atomic": the one-pass backward's dK/dV kernel adding dQ (DQ_MODE 1 by atomics, or 3
# by TMA reductions with --tma), at its own configs
KERNELS = {"dkdv": "attn_bwd_dkdv_kernel", "dq": "attn_bwd_dq_kernel",
           "dkdv_atomic": "attn_bwd_dkdv_kernel", "fwd": "attn_fwd_kernel"}
INSTR = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")


def _import(src, triton_dir):
    """kernels/attention.py of checkout `src` on real Triton from `triton_dir`."""
    sys.path[:0] = [str(Path(src) / "src"), str(Path(src) / "packages" / "minitriton" / "src"),
                    str(triton_dir)]
    os.environ["TRITONLAB_BACKEND"] = "triton"
    import tritonlab.kernels.attention as attention
    return attention


def _block_d(d):
    """The head dim's block, as kernels/attention.py's _block_d: the next power of two, 16
    at least."""
    return max(16, 1 << (d - 1).bit_length())


def _even(tuning, kernel, seq, d):
    """Whether the host leaves the masked tail loop out (attention._whole_tiles): `seq` a
    multiple of the widest block, of the launch's configs and the simulator's, along the axis
    the loop walks (dK/dV's queries: BLOCK_M; dQ's and the forward's keys: BLOCK_N)."""
    axis = 0 if kernel.startswith("dkdv") else 1
    blocks = [c[axis] for c in tuning.configs(kernel, _block_d(d))]
    return seq % max(blocks + [tuning.simulator(kernel)[axis]]) == 0


def _signature(fn, consts, dtype, kernel, seq, d):
    """Triton's specialization of the table's launch: pointers and multiples of 16 divisible
    by 16, ints equal to 1 (the head count, the last dim's strides) constants."""
    signature, constants, attrs = {}, {}, {}
    rows = {"z": seq * d, "h": seq * d, "m": d, "n": d, "d": 1}
    for i, name in enumerate(fn.arg_names):
        if fn.params[i].is_constexpr:
            signature[name], constants[name] = "constexpr", consts[name]
        elif name.endswith("_ptr"):
            # dK/dV's dQ rows are fp32 where it adds them (the one pass), else q's dtype unused
            fp32 = name in ("lse_ptr", "delta_ptr") or (name == "dq_ptr"
                                                         and kernel == "dkdv_atomic")
            signature[name] = "*" + ("fp32" if fp32 else dtype)
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif name in ("qk_scale", "scale"):
            signature[name] = "fp32"
        else:
            v = {"n_heads": 1, "n_queries": seq, "n_keys": seq}.get(name)
            v = rows[name[-1]] if v is None else v
            if v == 1:
                signature[name], constants[name] = "constexpr", 1
            else:
                signature[name] = "i32"
                if v % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
    return signature, constants, attrs


def loops(sass):
    """(instructions, wgmma, waits) of each loop: the spans a branch jumps back over."""
    ins = [(int(m.group(1), 16), m.group(2)) for m in map(INSTR.match, sass.splitlines()) if m]
    found = []
    for at, text in ins:
        back = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", text)
        if back and int(back.group(1), 16) < at:
            body = [t for a, t in ins if int(back.group(1), 16) <= a <= at]
            found.append((len(body), sum("HGMMA" in t for t in body),
                          sum("WARPGROUP.DEPBAR" in t for t in body)))
    return found


def _folds(attention, d, dtype):
    """Whether the pointer forward folds a positive scale at head dim d and dtype (bf16,
    fp32): the tuning's rule (attention._fold, Hopper's table), always in an older checkout."""
    if not hasattr(attention, "_fold"):
        return True
    import torch
    from tritonlab.kernels import tuning
    q = torch.empty(1, 1, 1, d, dtype=torch.float32 if dtype == "fp32" else torch.bfloat16,
                    device="meta")
    return attention._fold(1.0, q, "pointers", tuning.TUNINGS["attention"][9])


def compile_one(job):
    """One launch compiled for sm_90: its resources and loops, or the compiler's error."""
    src, triton_dir, kernel, d, dtype, causal, config, seq, tma, even = job
    attention = _import(src, triton_dir)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    bm, bn, warps, stages = config
    fn = getattr(attention, KERNELS[kernel])
    consts = dict(HEAD_DIM=d, BLOCK_D=_block_d(d), IS_CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn,
                  LOAD_TMA=tma)
    if kernel.startswith("dkdv"):
        consts.update(DQ_MODE=0 if kernel == "dkdv" else 3 if tma else 1, EVEN_QUERIES=even)
    else:  # dQ, the pointer forward (FOLD as the tuning has it for a positive scale)
        consts.update(EVEN_KEYS=not causal and even, FOLD=_folds(attention, d, dtype))
    consts = {k: v for k, v in consts.items() if k in fn.arg_names}  # an older checkout's
    row = dict(kernel=kernel, d=d, dtype=dtype, causal=causal, config=list(config))
    try:
        signature, constants, attrs = _signature(fn, consts, dtype, kernel, seq, d)
        compiled = triton.compile(ASTSource(fn, signature, constants, attrs),
                                  target=GPUTarget("cuda", 90, 32),
                                  options=dict(num_warps=warps, num_stages=stages))
    except Exception as e:  # noqa: BLE001 - the compiler's error is the finding
        return {**row, "error": f"{type(e).__name__}: {str(e).strip()[-300:]}"}
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from compile_check import _resources  # registers, spilled stack, shared memory
    cuobjdump = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        sass = subprocess.run([str(cuobjdump), "-sass", f.name], capture_output=True,
                              text=True, check=True).stdout
    used = _resources(compiled, str(cuobjdump))
    return {**row, "registers": used["registers"], "stack": used["stack"], "loops": loops(sass)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    compile_check.probe_options(p, "a loop waits after every one of its wgmma (more than two)",
                                "the launches not compiled or waiting after every wgmma")
    p.add_argument("--dims", default="16,32,64,128")
    p.add_argument("--dtypes", default="bf16,fp32")
    p.add_argument("--kernels", default="dkdv,dq", help="of dkdv, dq, dkdv_atomic, fwd (the pointer "
                   "forward; not with --tma)")
    p.add_argument("--seq", type=int, default=32768)
    p.add_argument("--tma", action="store_true", help="their TMA form (LOAD_TMA: the tiles "
                   "through descriptors, the backward 'two-kernel-tma')")
    a = p.parse_args(argv)
    if a.tma and "fwd" in a.kernels.split(","):
        p.error("--tma: the TMA forward is another kernel (attn_fwd_tma_kernel); leave fwd out")
    sys.path.insert(0, str(ROOT / "src"))
    from tritonlab.kernels.tuning import TUNINGS
    tuning = TUNINGS["attention"][9]
    jobs = [(a.src, a.triton, kernel, d, dtype, causal, tuple(config), a.seq, a.tma,
             _even(tuning, kernel, a.seq, d))
            for d in map(int, a.dims.split(",")) for dtype in a.dtypes.split(",")
            for causal in ((True, False) if d >= 64 else (True,))
            for kernel in a.kernels.split(",")
            for config in tuning.configs(kernel, _block_d(d))]
    # fresh processes: each imports the kernels of --src, not this one's tritonlab
    rows = compile_check.compile_in_pool(compile_one, jobs, a.jobs)
    serial = [r for r in rows if any(m > 2 and w >= m for _, m, w in r.get("loops", ()))]
    compile_check.print_rows(
        rows, serial, a.quiet, a.out,
        lambda r: (f"{r['kernel']:5} d={r['d']:<3} {r['dtype']} "
                   f"{'causal' if r['causal'] else 'full  '} {'x'.join(map(str, r['config'])):12}"),
        lambda r: f"regs {r['registers']:3} stack {r['stack']:4}  " + "  ".join(
            f"[{n} ins, {m} wgmma, {w} waits]" for n, m, w in r["loops"]))
    print(f"{len(rows)} launches, {sum('error' in r for r in rows)} not compiled, {len(serial)} "
          f"with a loop waiting after every wgmma")
    return 1 if any("error" in r for r in rows) or (a.check and serial) else 0


if __name__ == "__main__":
    sys.exit(main())
