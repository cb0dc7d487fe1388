"""Probe: which `a * b + c` Triton 3.6 contracts into one fused multiply-add on the GPU, per type
(fp16, bf16, fp32, fp64), per layout (elements per thread 1..8, and a 4-element block that
every thread replicates, as the fuzzer's small cases) and per shape of the expression (one use
of the product or several, a sum of two products, the product also stored, a product of a
constant); plus the other divergences of issue 33 that the differential fuzzer found: float `%`
of constants (folded by the compiler), a bf16 comparison with a literal below bf16's range,
fp64 `exp2` (libdevice), and the fuzzer's own cases with those constructs (GPU outputs kept
for every case, not only the failing ones, so that a rule can be fitted to them).

    python benchmarks/probes/fp_contract.py --out DIR [--workers 12] [--fuzz-seeds 60000]
        [--parts contraction,misc,exp64,fuzz,ir,fresh] [--sim]   (about 60 s on the H200)

Writes DIR/contract.npz (inputs and outputs of every contraction variant, raw bits),
DIR/contract_ptx.json (the arithmetic lines of each variant's PTX), DIR/misc.json (float `%`
of constants, bf16 comparisons, with their TTIR/PTX), DIR/exp64.npz (fp64 exp2/exp/log2/log of
many inputs), DIR/fuzz_cases.json.gz (fuzz records with both sides' outputs); the parts `ir`
(the LLVM IR and PTX of cases that still differ) and `fresh` (fresh seeds, every output kept)
are for checking a rule afterwards. `--sim` is a dry run on the CPU, minitriton standing in.
minitriton's rules (language/arith.py) were fitted to these, measured 2026-12-03;
docs/numerics.md says what was found."""
import argparse
import gzip
import importlib.util
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "packages/minitriton/src"), str(ROOT / "tests/minitriton")]

DTYPES = ("float16", "bfloat16", "float32", "float64")
# (BLOCK, num_warps): elements per thread 1, 2, 4, 8 (fp16/bf16; fp32 holds at most 4 per
# 16-byte vector), a 4-element block replicated over 128 threads (the fuzzer's small cases),
# and one warp holding 2 each
LAYOUTS = ((128, 4), (256, 4), (512, 4), (1024, 4), (4, 4), (64, 1))

# name: (body lines, outputs). a..f are loads of the same type; o0..o4 outputs.
EXPRS = {
    "ab+c": (["r0 = a * b + c"], 1),
    "c+ab": (["r0 = c + a * b"], 1),
    "ab-c": (["r0 = a * b - c"], 1),
    "c-ab": (["r0 = c - a * b"], 1),
    "2-ab": (["r0 = 2.0 - a * b"], 1),
    "ab+2.5": (["r0 = a * b + 2.5"], 1),
    "ab+cd": (["r0 = a * b + c * d"], 1),
    "ab-cd": (["r0 = a * b - c * d"], 1),
    "-ab+cd": (["r0 = -(a * b) + c * d"], 1),
    "cd-(-ab)": (["r0 = c * d - (-(a * b))"], 1),
    "ab+cd,cd": (["r0 = a * b + c * d", "r1 = c * d"], 2),
    "ab+cd,ab": (["r0 = a * b + c * d", "r1 = a * b"], 2),
    "p+c,p-d": (["p = a * b", "r0 = p + c", "r1 = p - d"], 2),
    "p+c,p": (["p = a * b", "r0 = p + c", "r1 = p"], 2),
    "ab+ab": (["r0 = a * b + a * b"], 1),
    "(ab+c)d+e": (["r0 = (a * b + c) * d + e"], 1),
    "a*0.1+c": (["r0 = a * 0.1 + c"], 1),
    "abc+d": (["r0 = a * b * c + d"], 1),
    "ab+cd+ef": (["r0 = a * b + c * d + e * f"], 1),
    "ef+(ab+cd)": (["r0 = e * f + (a * b + c * d)"], 1),
    "fusion": (["r0 = a * b + a", "r1 = a * b - c", "r2 = c - a * b", "r3 = a * b + c * a",
                "p = a * b", "r4 = p + c + p * 0.5"], 5),
    "ext(ab)+c": (["r0 = (a * b).to(tl.float32) + c.to(tl.float32)"], 1),
    "ab+c32": (["r0 = a * b + c.to(tl.float32)"], 1),
}
HALF_ONLY = ("ext(ab)+c", "ab+c32")


def contraction_source(name, dtype):
    lines, n_out = EXPRS[name]
    outs = ", ".join(f"o{i}" for i in range(n_out))
    body = "\n".join(f"    {ln}" for ln in lines)
    stores = "\n".join(f"    tl.store(o{i} + offs, r{i})" for i in range(n_out))
    return f'''
@triton.jit
def kernel(a_ptr, b_ptr, c_ptr, d_ptr, e_ptr, f_ptr, {outs}, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    d = tl.load(d_ptr + offs)
    e = tl.load(e_ptr + offs)
    f = tl.load(f_ptr + offs)
{body}
{stores}
'''


DEVICE = "cuda"


def use_simulator():
    """`--sim`: minitriton stands in for Triton on the CPU (a dry run of this script)."""
    global DEVICE
    import minitriton
    minitriton.install_as_triton()
    DEVICE = "cpu"


def asm(handle, kind):
    return getattr(handle, "asm", {}).get(kind, "") if handle is not None else ""


def load_source(src, tag):
    if DEVICE == "cpu":
        use_simulator()
    import triton
    import triton.language as tl
    path = Path(tempfile.mkdtemp(prefix="fpc_")) / f"k_{tag}.py"
    path.write_text("import triton\nimport triton.language as tl\n" + src)
    spec = importlib.util.spec_from_file_location(f"k_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    mod.triton, mod.tl = triton, tl
    spec.loader.exec_module(mod)
    return mod


def np_dtype(name):
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def to_torch(a):
    import torch
    if a.dtype == np_dtype("bfloat16"):
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(DEVICE)
    return torch.from_numpy(a.copy()).to(DEVICE)


def from_torch(t):
    import torch
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np_dtype("bfloat16"))
    return t.numpy()


def sync():
    import torch
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def contraction_inputs(dtype, block):
    rng = np.random.default_rng(DTYPES.index(dtype) * 10000 + block)
    n = 2 * block
    return [rng.standard_normal(n).astype(np_dtype(dtype)) for _ in range(6)]


PTX_OPS = ("fma", "mul", "add", "sub", "neg", "cvt", "mov.b32", "mov.b16", "min", "max")


def arith_lines(ptx):
    keep = []
    for ln in ptx.splitlines():
        s = ln.strip()
        if s.split(" ")[0].split(".")[0] in PTX_OPS and not s.startswith(("add.s", "mul.wide",
                                                                          "add.u", "mov.u")):
            keep.append(s)
    return keep


def run_contraction(job):
    """Compile and run a list of (name, dtype, block, warps) variants."""
    import torch
    global DEVICE
    variants, DEVICE = job
    out = []
    for name, dtype, block, warps in variants:
        key = f"{name}|{dtype}|{block}|{warps}"
        try:
            mod = load_source(contraction_source(name, dtype), abs(hash(key)) % 10**9)
            ins = contraction_inputs(dtype, block)
            n_out = EXPRS[name][1]
            out_dtype = torch.float32 if name in HALF_ONLY else to_torch(ins[0][:1]).dtype
            outs = [torch.empty(2 * block, dtype=out_dtype, device=DEVICE) for _ in range(n_out)]
            h = mod.kernel[(2,)](*[to_torch(a) for a in ins], *outs, BLOCK=block, num_warps=warps)
            sync()
            res = {f"out{i}": from_torch(o) for i, o in enumerate(outs)}
            out.append((key, res, arith_lines(asm(h, "ptx")),
                        asm(h, "llir") if (block, warps) in ((256, 4), (4, 4)) else None, None))
        except Exception:  # noqa: BLE001 - a variant that fails is a finding, not the end
            out.append((key, {}, [], None, traceback.format_exc()[-2000:]))
    return out


def contraction(out_dir, workers):
    jobs = []
    for name in EXPRS:
        for dtype in DTYPES:
            if name in HALF_ONLY and dtype not in ("float16", "bfloat16"):
                continue
            for block, warps in LAYOUTS:
                if dtype == "float64" and (block, warps) not in ((128, 4), (256, 4), (4, 4)):
                    continue
                jobs.append((name, dtype, block, warps))
    chunks = [(jobs[i::workers], DEVICE) for i in range(workers)]
    with mp.get_context("spawn").Pool(workers) as pool:
        parts = pool.map(run_contraction, chunks)
    arrays, ptx, errors = {}, {}, {}
    for dtype in DTYPES:
        for block, _ in LAYOUTS:
            for i, a in enumerate(contraction_inputs(dtype, block)):
                arrays[f"in|{dtype}|{block}|{'abcdef'[i]}"] = a.view(f"u{a.itemsize}")
    for part in parts:
        for key, res, lines, llir, err in part:
            for k, v in res.items():
                arrays[f"{key}|{k}"] = v.view(f"u{v.itemsize}")
            ptx[key] = {"ptx": lines, "llir": llir}
            if err:
                errors[key] = err
    np.savez_compressed(out_dir / "contract.npz", **arrays)
    (out_dir / "contract_ptx.json").write_text(json.dumps({"ptx": ptx, "errors": errors}))
    print(f"contraction: {len(jobs)} variants, {len(errors)} errors", flush=True)


# ------------------------------------------------------------------ float %, bf16 literals

MOD_CASES = {
    # name: (dtype, body computing r, inputs x, y as lists)
    "full3%third": ("float32", "r = tl.full([BLOCK], 3.0, tl.float32) % 0.3333333333333333"),
    "full-3%third": ("float32", "r = tl.full([BLOCK], -3.0, tl.float32) % 0.3333333333333333"),
    "full3%-third": ("float32", "r = tl.full([BLOCK], 3.0, tl.float32) % -0.3333333333333333"),
    "full3%fullthird": ("float32", "r = tl.full([BLOCK], 3.0, tl.float32) % "
                                   "tl.full([BLOCK], 0.3333333333333333, tl.float32)"),
    "x%third": ("float32", "r = x % 0.3333333333333333"),
    "full3%y": ("float32", "r = tl.full([BLOCK], 3.0, tl.float32) % y"),
    "(full3+0)%third": ("float32", "r = (tl.full([BLOCK], 3.0, tl.float32) + 0.5) % "
                                   "0.3333333333333333"),
    "full1e10%0.1": ("float32", "r = tl.full([BLOCK], 1e10, tl.float32) % 0.1"),
    "full-4%2": ("float32", "r = tl.full([BLOCK], -4.0, tl.float32) % 2.0"),
    "full-4%fy": ("float32", "r = tl.full([BLOCK], -4.0, tl.float32) % y"),
    "f16full3%third": ("float16", "r = tl.full([BLOCK], 3.0, tl.float16) % 0.3333333333333333"),
    "bf16full3%third": ("bfloat16", "r = tl.full([BLOCK], 3.0, tl.bfloat16) % "
                                    "0.3333333333333333"),
    "f64full3%third": ("float64", "r = tl.full([BLOCK], 3.0, tl.float64) % 0.3333333333333333"),
    "f64full3%0.1": ("float64", "r = tl.full([BLOCK], 3.0, tl.float64) % 0.1"),
    "fullthird*full3%x": ("float32", "r = (tl.full([BLOCK], 0.1, tl.float32) * "
                                     "tl.full([BLOCK], 3.0, tl.float32) + x) % 7.0"),
    "full_prod+x": ("float32", "r = tl.full([BLOCK], 0.1, tl.float32) * "
                               "tl.full([BLOCK], 0.3333333333333333, tl.float32) + x"),
    "full*x+y": ("float32", "r = tl.full([BLOCK], 0.1, tl.float32) * x + y"),
}

CMP_LITERALS = ("1e-40", "-1e-40", "1e-30", "3e-7", "1e-7", "6.1e-05", "1e-3", "0.3333333333333333")


def misc_source():
    mods = []
    for i, (name, (dtype, body)) in enumerate(MOD_CASES.items()):
        mods.append(f'''
@triton.jit
def mod_{i}(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    {body}
    tl.store(out_ptr + offs, r)
''')
    lines = []
    k = 0
    for lit in CMP_LITERALS:
        for op in ("<", "<=", ">", "=="):
            lines.append(f"    tl.store(out_ptr + {k} * N + offs, (x {op} {lit}).to(tl.int8))")
            k += 1
        lines.append(f"    tl.store(add_ptr + {k} * N + offs, x + {lit})")
        lines.append(f"    tl.store(add_ptr + {k + 1} * N + offs, x * {lit})")
        k += 2
    body = "\n".join(lines)
    cmp = f'''
@triton.jit
def cmp_kernel(x_ptr, out_ptr, add_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
{body}
'''
    return "".join(mods) + cmp, k


def small_values(dtype):
    """Every 16-bit pattern of the type near zero, both signs, and a few normal numbers."""
    if dtype in ("bfloat16", "float16"):
        bits = np.concatenate([np.arange(0, 0x100), np.arange(0x8000, 0x8100),
                               np.arange(0x100, 0x180), [0x3c00, 0x3f80, 0x7f80, 0x7fc0, 0x4000,
                                                         0x3400, 0x3500, 0x3580, 0x3300]])
        bits = np.resize(bits.astype(np.uint16), 1024)
        return bits.view(np_dtype(dtype))
    v = np.concatenate([np.arange(0, 0x200) << 14, (np.arange(0, 0x200) << 14) | 0x80000000,
                        np.array([0x00800000, 0x3f800000, 0x33d6bf95, 0x1e3ce508, 0x0001168d])])
    return np.resize(v.astype(np.uint32), 1024).view(np.float32)


def misc(out_dir):
    import torch
    src, n_rows = misc_source()
    mod = load_source(src, "misc")
    report = {"mod": {}, "cmp": {}}
    xs = {"float32": np.array([3.0, -3.0, 1e10, 0.5, 7.25, -4.0, 1.0, 2.0], np.float32),
          "float16": np.array([3.0, -3.0, 1000.0, 0.5, 7.25, -4.0, 1.0, 2.0], np.float16),
          "bfloat16": np.array([3.0, -3.0, 1e10, 0.5, 7.25, -4.0, 1.0, 2.0],
                               np_dtype("bfloat16")),
          "float64": np.array([3.0, -3.0, 1e10, 0.5, 7.25, -4.0, 1.0, 2.0], np.float64)}
    ys = {k: np.array([0.3333333333333333, 2.0, 0.1, 3.0, -0.3, 2.0, 0.75, 7.0]).astype(v.dtype)
          for k, v in xs.items()}
    for i, (name, (dtype, body)) in enumerate(MOD_CASES.items()):
        try:
            half = dtype in ("float16", "bfloat16")
            out_t = torch.float32 if half else to_torch(xs[dtype][:1]).dtype
            out = torch.empty(8, dtype=out_t, device=DEVICE)
            h = getattr(mod, f"mod_{i}")[(1,)](to_torch(xs[dtype]), to_torch(ys[dtype]), out,
                                               BLOCK=8)
            sync()
            r = from_torch(out)
            report["mod"][name] = {"body": body, "x": xs[dtype].astype(np.float64).tolist(),
                                   "y": ys[dtype].astype(np.float64).tolist(),
                                   "r": r.astype(np.float64).tolist(),
                                   "r_bits": r.view(f"u{r.itemsize}").tolist(),
                                   "ttir": asm(h, "ttir"), "ptx": arith_lines(asm(h, "ptx")) +
                                   [ln.strip() for ln in asm(h, "ptx").splitlines()
                                    if "rem" in ln or "div" in ln or "rzi" in ln]}
        except Exception:  # noqa: BLE001
            report["mod"][name] = {"error": traceback.format_exc()[-1500:]}
    for dtype in ("bfloat16", "float16", "float32"):
        try:
            x = small_values(dtype)
            n = x.size
            out = torch.empty(n_rows * n, dtype=torch.int8, device=DEVICE)
            add = torch.zeros(n_rows * n, dtype=to_torch(x[:1]).dtype, device=DEVICE)
            h = mod.cmp_kernel[(1,)](to_torch(x), out, add, N=n)
            sync()
            a = from_torch(add)
            report["cmp"][dtype] = {"x_bits": x.view(f"u{x.itemsize}").tolist(),
                                    "literals": CMP_LITERALS,
                                    "out": from_torch(out).reshape(n_rows, n).tolist(),
                                    "add_bits": a.view(f"u{a.itemsize}").reshape(n_rows,
                                                                                  n).tolist(),
                                    "ttir": asm(h, "ttir"), "llir": asm(h, "llir"),
                                    "ptx": asm(h, "ptx")}
        except Exception:  # noqa: BLE001
            report["cmp"][dtype] = {"error": traceback.format_exc()[-1500:]}
    (out_dir / "misc.json").write_text(json.dumps(report))
    print("misc: done", flush=True)


# ------------------------------------------------------------------ fp64 exp2 and friends

EXP_SRC = '''
@triton.jit
def f64_kernel(x_ptr, e2_ptr, e_ptr, l2_ptr, l_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(e2_ptr + offs, tl.exp2(x))
    tl.store(e_ptr + offs, tl.exp(x))
    tl.store(l2_ptr + offs, tl.log2(tl.abs(x)))
    tl.store(l_ptr + offs, tl.log(tl.abs(x)))
'''


def exp64(out_dir):
    import torch
    mod = load_source(EXP_SRC, "exp64")
    rng = np.random.default_rng(33)
    x = np.concatenate([rng.uniform(-1100, 1100, 16384), rng.uniform(-30, 30, 16384),
                        3.0 * np.abs(rng.standard_normal(16384) * 8),
                        rng.uniform(-1, 1, 16384)])
    n = 1024
    xs = to_torch(x)
    outs = [torch.empty_like(xs) for _ in range(4)]
    h = mod.f64_kernel[(x.size // n,)](xs, *outs, N=n)
    sync()
    np.savez_compressed(out_dir / "exp64.npz", x=x, exp2=from_torch(outs[0]),
                        exp=from_torch(outs[1]), log2=from_torch(outs[2]), log=from_torch(outs[3]))
    (out_dir / "exp64_ptx.txt").write_text(asm(h, "ptx")[:400000])
    print("exp64: done", flush=True)


# ------------------------------------------------------------------ the fuzzer's cases

WANTED = {"contract:fp16": 700, "contract:bf16": 200, "contract2": 700, "bf16_literal": 80,
          "float_mod": 150, "fma32_tie": 60}


def _scan(rng_):
    from fuzz import generate_seeded
    hits = []
    for s in rng_:
        ops = set(generate_seeded(s).ops)
        tags = [t for t in WANTED if t in ops]
        if tags:
            hits.append((s, tags))
    return hits


def fuzz_seeds(limit, workers):
    ranges = [range(w, limit, workers) for w in range(workers)]
    with mp.get_context("spawn").Pool(workers) as pool:
        parts = pool.map(_scan, ranges)
    hits = sorted(h for p in parts for h in p)
    taken, counts = [], dict.fromkeys(WANTED, 0)
    for s, tags in hits:
        if any(counts[t] < WANTED[t] for t in tags):
            taken.append(s)
            for t in tags:
                counts[t] += 1
    return taken + [901211, 901719], counts


def fuzz(out_dir, workers, limit):
    from fuzz import run_cases
    t = time.time()
    seeds, counts = fuzz_seeds(limit, workers)
    print(f"fuzz: {len(seeds)} seeds chosen in {time.time() - t:.0f} s: {counts}", flush=True)
    real = "triton" if DEVICE == "cuda" else "minitriton-sequential"
    records = run_cases(seeds, real=real, workers=workers, keep=True,
                        deadline=time.time() + 100)
    with gzip.open(out_dir / "fuzz_cases.json.gz", "wt") as f:
        json.dump(records, f, default=str)
    bad = sum(r["status"] != "ok" for r in records)
    print(f"fuzz: {len(records)} records, {bad} not ok, {time.time() - t:.0f} s", flush=True)


def ir_dump(out_dir, seeds, fresh_report):
    """The LLVM IR and PTX arithmetic of cases that still differ: `seeds`, and the failures of
    a fuzz_gpu.py report (`fresh_report`, if it exists)."""
    from fuzz import Case, generate_seeded
    from fuzz.run import Gpu, Sim, _host, load_module, module_source
    cases = [generate_seeded(s) for s in seeds]
    if fresh_report and Path(fresh_report).exists():
        rep = json.loads(Path(fresh_report).read_text())
        cases += [Case.from_json(f["case"]) for f in rep["failures"] if "case" in f][:60]
    gpu = Gpu() if DEVICE == "cuda" else Sim()
    tmp = Path(tempfile.mkdtemp(prefix="fpc_ir_"))
    dumps = {}
    for case in cases:
        try:
            path = tmp / f"fz_ir_{case.cid}.py"
            path.write_text(module_source("one", [case]))
            mod = load_module(path, gpu.triton, gpu.tl)
            arrays, outs = _host(case)
            args = [gpu.put(arrays[i.name]) for i in case.inputs]
            args += [gpu.put(o) for o in outs.values()]
            h = mod.fz_one[(2,)](*args)
            sync()
            llir = asm(h, "llir")
            keep = [ln for ln in llir.splitlines() if any(w in ln for w in (
                " fmul ", " fadd ", " fsub ", " fneg ", "fma", "extractelement", "insertelement",
                "shufflevector", " fpext ", " fptrunc ", "sitofp", "uitofp", "frem", "fdiv"))]
            dumps[case.cid] = {"src": case.source(), "llir": keep,
                               "ptx": arith_lines(asm(h, "ptx"))}
        except Exception:  # noqa: BLE001
            dumps[case.cid] = {"error": traceback.format_exc()[-1500:]}
    (out_dir / "ir_dumps.json").write_text(json.dumps(dumps))
    print(f"ir: {len(dumps)} cases", flush=True)


def fresh(out_dir, workers, start, count, budget):
    """Fuzz cases start..start+count-1 with both sides' outputs kept for every case."""
    from fuzz import run_cases, summarize
    t = time.time()
    real = "triton" if DEVICE == "cuda" else "minitriton-sequential"
    records = run_cases(range(start, start + count), real=real, workers=workers, keep=True,
                        deadline=time.time() + budget)
    with gzip.open(out_dir / "fresh_cases.json.gz", "wt") as f:
        json.dump(records, f, default=str)
    total = summarize(records)["total"]
    print(f"fresh: {len(records)} records in {time.time() - t:.0f} s: {total}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--fuzz-seeds", type=int, default=60000)
    ap.add_argument("--parts", default="contraction,misc,exp64,fuzz")
    ap.add_argument("--sim", action="store_true", help="dry run on the CPU with minitriton")
    ap.add_argument("--ir-seeds", default="", help="seeds whose IR to dump (part `ir`)")
    ap.add_argument("--fresh-report", default="", help="a fuzz_gpu.py report: its failures' IR")
    ap.add_argument("--fresh", default="920000,1500,60", help="start,count,budget s (`fresh`)")
    args = ap.parse_args()
    if args.sim:
        use_simulator()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if DEVICE == "cuda":
        import torch
        import triton
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"triton {triton.__version__}", flush=True)
    for part in args.parts.split(","):
        try:
            if part == "contraction":
                contraction(out, args.workers)
            elif part == "misc":
                misc(out)
            elif part == "exp64":
                exp64(out)
            elif part == "fuzz":
                fuzz(out, args.workers, args.fuzz_seeds)
            elif part == "ir":
                ir_dump(out, [int(x) for x in args.ir_seeds.split(",") if x], args.fresh_report)
            elif part == "fresh":
                start, count, budget = (int(x) for x in args.fresh.split(","))
                fresh(out, args.workers, start, count, budget)
        except Exception:  # noqa: BLE001
            print(f"{part} failed:\n{traceback.format_exc()}", flush=True)
        print(f"[{time.time() - t0:.0f} s] {part}", flush=True)


if __name__ == "__main__":
    main()
