"""Issue 38's validation: the performance model's predictions from the simulator alone, judged
by real Triton on a GPU, on kernels the model was not fitted on.

    # here (any CPU): predict every pair, as a user without a GPU gets it
    python benchmarks/perf_model_validate.py predict --tutorials DIR [--out FILE.json]
    # on the GPU: time every pair, and every configuration of each autotuned kernel
    python benchmarks/perf_model_validate.py measure --tutorials DIR [--out FILE.json]
    # anywhere: the table and the acceptance figures
    python benchmarks/perf_model_validate.py judge PREDICTED.json MEASURED.json [--md FILE]

A pair is one (kernel, shape): the project's kernels at shapes the configuration sweep (the
fit's data) did not run; Triton's tutorials 02, 03, 05, 06, 08 and 09 (DIR holds their files,
fetched from Triton's repository at the GPU's release: never committed); Liger-Kernel's
autotuned operators (its wheel, installed). Each pair is a callable that launches kernels only
(host code that runs torch ops is left out of it), made the same way on both sides.

`predict` runs every pair under minitriton (installed as `triton`, CUDA tensors on the CPU, the
emulated GPU the `--gpu`) inside `minitriton.predicting(gpu, sample=16)`: every launch runs 16
of its programs, its counts scaled to the grid, the autotuner ranks configurations by the
model; the pair's predicted time is the sum over its launches. `measure` times each pair with
triton.testing.do_bench (10 ms warm-up, 40 ms of repetitions, L2 flushed; the median, as the
configuration sweep was timed) after the GPU's autotuner chose, then every configuration of each
autotuned kernel forced one at a time. `judge` reports, per pair, predicted against measured,
and per autotuned kernel the configuration the CPU picked against the GPU's best and median.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import datetime
import json
import math
import os
import statistics
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src", "benchmarks"):
    sys.path.insert(0, str(ROOT / _src))

from device_time import device_ms  # noqa: E402

TUTORIALS = ("02-fused-softmax", "03-matrix-multiplication", "05-layer-norm",
             "06-fused-attention", "08-grouped-gemm", "09-persistent-matmul")


@dataclass
class Pair:
    """One (kernel, shape): `make(env)` returns the callable that launches it; `tuned` names
    the autotuned kernels it launches, as (module key, attribute) in env.modules."""
    name: str
    source: str
    make: object
    tuned: tuple = ()


def config_label(config):
    """A triton.Config as predicting's labels write it (minitriton.runtime.predicting)."""
    from minitriton.runtime.predicting import config_label as label
    return label(config.kwargs, config.all_kwargs())


# -- the tutorials, loaded without their tests and benchmarks ---------------------------------

def _calls(node, names):
    """Whether `node` calls a function of `names` (the module's own)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
               for n in ast.walk(node))


def _kept(node, names):
    """A tutorial's top-level statement kept: definitions, imports, assignments that call none
    of the module's functions (those run its kernels), and `if`/`try` made only of such."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return not _calls(node.value, names) if node.value is not None else True
    if isinstance(node, ast.If):
        if isinstance(node.test, ast.Compare) and "__name__" in ast.unparse(node.test):
            return False
        return all(_kept(n, names) for n in node.body + node.orelse)
    if isinstance(node, ast.Try):
        return all(_kept(n, names) for n in node.body)
    return False


def load_tutorial(directory, stem):
    """The tutorial's module: its definitions and settings, none of its tests or benchmarks."""
    path = Path(directory) / f"{stem}.py"
    tree = ast.parse(path.read_text(), str(path))
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    tree.body = [n for n in tree.body if _kept(n, names)]
    module = types.ModuleType(f"tutorial_{stem[:2]}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses and pickling look modules up
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


class Env:
    """The modules pairs are made from, loaded once: `tut(stem)`, `liger(name)`, `project`."""

    def __init__(self, tutorials):
        self.tutorials, self.modules = tutorials, {}

    def tut(self, stem):
        if stem not in self.modules:
            self.modules[stem] = load_tutorial(self.tutorials, stem)
        return self.modules[stem]

    def liger(self, name):
        import importlib
        key = f"liger.{name}"
        if key not in self.modules:
            self.modules[key] = importlib.import_module(f"liger_kernel.ops.{name}")
        return self.modules[key]


# -- the pairs ---------------------------------------------------------------------------------

def _project_pairs():
    import torch

    def kernel(module, name):
        import importlib
        return getattr(importlib.import_module(f"tritonlab.kernels.{module}"), name)

    def dt(name):
        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]

    out = []
    for name, n, d in (("add", 30_000_000, "fp32"), ("add", 1 << 25, "fp16"),
                       ("gelu", 1 << 22, "fp32"), ("silu", 1 << 25, "bf16")):
        def make(env, name=name, n=n, d=d):
            k = kernel("elementwise", f"{name}_kernel")
            xs = [torch.randn(n, device="cuda", dtype=dt(d)) for _ in range(3 if name == "add"
                                                                              else 2)]
            return lambda: k[(-(-n // 1024),)](*xs, n, BLOCK_SIZE=1024, num_warps=4)
        out.append(Pair(f"project {name}_kernel {d} {n}", "project", make))
    for name, M, N, d, w in (("softmax", 2048, 3000, "fp32", 8),
                             ("softmax", 16384, 2048, "bf16", 8),
                             ("row_sum", 16384, 1024, "fp32", 4),
                             ("rmsnorm_fwd", 4096, 5120, "bf16", 8)):
        def make(env, name=name, M=M, N=N, d=d, w=w):
            import tritonlab.backend as be
            block = 1 << (N - 1).bit_length()
            x = torch.randn(M, N, device="cuda", dtype=dt(d))
            y = torch.empty_like(x)
            if name == "softmax":
                k = kernel("softmax", "softmax_kernel")
                return lambda: k[(M,)](x, y, N, N, N, BLOCK_SIZE=block, ACC=be.tl.float32,
                                       num_warps=w)
            if name == "row_sum":
                k, out1 = kernel("rowsum", "row_sum_kernel"), torch.empty(M, device="cuda")
                return lambda: k[(M,)](x, out1, N, N, BLOCK_SIZE=1024, ACC=be.tl.float32,
                                       num_warps=w)
            k = kernel("rmsnorm", "rmsnorm_fwd_kernel")
            g, rstd = torch.randn(N, device="cuda", dtype=dt(d)), torch.empty(M, device="cuda")
            return lambda: k[(M,)](x, g, y, rstd, N, 1e-6, BLOCK_SIZE=block, ACC=be.tl.float32,
                                   num_warps=w)
        out.append(Pair(f"project {name}_kernel {d} {M}x{N}", "project", make))
    for M, N, K, d, cfg in ((3072, 3072, 3072, "bf16", (128, 128, 64, 8, 3)),
                            (2048, 8192, 1024, "fp16", (128, 256, 64, 8, 3)),
                            (4096, 4096, 4096, "bf16", (128, 128, 32, 4, 4))):
        def make(env, M=M, N=N, K=K, d=d, cfg=cfg):
            k = kernel("matmul", "matmul_kernel")
            a = torch.randn(M, K, device="cuda", dtype=dt(d))
            b = torch.randn(K, N, device="cuda", dtype=dt(d))
            c = torch.empty(M, N, device="cuda", dtype=dt(d))
            bm, bn, bk, w, s = cfg
            grid = (-(-M // bm) * -(-N // bn),)
            return lambda: k[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=bm, BLOCK_N=bn,
                                   BLOCK_K=bk, GROUP_M=8, ACTIVATION="relu", num_warps=w,
                                   num_stages=s)
        out.append(Pair(f"project matmul_kernel {d} {M}x{N}x{K} {cfg}", "project", make))
    return out


def _tutorial_pairs():
    import torch
    out = []
    for M, N, d in ((1823, 781, torch.float32), (4096, 4096, torch.float32),
                    (8192, 1000, torch.float32), (16384, 2048, torch.float16)):
        def make(env, M=M, N=N, d=d):
            t, x = env.tut("02-fused-softmax"), torch.randn(M, N, device="cuda", dtype=d)
            return lambda: t.softmax(x)
        out.append(Pair(f"t02 softmax {str(d)[6:]} {M}x{N}", "tutorial 02", make))
    for M, N, K in ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
                    (8192, 8192, 1024)):
        def make(env, M=M, N=N, K=K):
            t = env.tut("03-matrix-multiplication")
            a = torch.randn(M, K, device="cuda", dtype=torch.float16)
            b = torch.randn(K, N, device="cuda", dtype=torch.float16)
            return lambda: t.matmul(a, b)
        out.append(Pair(f"t03 matmul fp16 {M}x{N}x{K}", "tutorial 03", make,
                        (("03-matrix-multiplication", "matmul_kernel"),)))
    for M, N, d in ((1151, 8192, torch.float16), (4096, 4096, torch.float16),
                    (8192, 2048, torch.float32)):
        def make(env, M=M, N=N, d=d):
            t = env.tut("05-layer-norm")
            x = torch.randn(M, N, device="cuda", dtype=d)
            w, b = torch.rand(N, device="cuda", dtype=d), torch.rand(N, device="cuda", dtype=d)
            return lambda: t.layer_norm(x, (N,), w, b, 1e-5)
        out.append(Pair(f"t05 layer_norm fwd {str(d)[6:]} {M}x{N}", "tutorial 05", make))
    for part in ("dx", "dwdb"):
        def make(env, part=part, M=4096, N=4096):
            t = env.tut("05-layer-norm")
            d, group = torch.float16, 128
            x, dy = (torch.randn(M, N, device="cuda", dtype=d) for _ in range(2))
            w = torch.rand(N, device="cuda", dtype=d)
            mean, rstd = torch.randn(M, device="cuda"), torch.rand(M, device="cuda") + 0.5
            locks = torch.zeros(2 * group, dtype=torch.int32, device="cuda")
            dw_, db_ = (torch.zeros(group, N, dtype=d, device="cuda") for _ in range(2))
            dw, db, dx = torch.empty(N, dtype=d, device="cuda"), \
                torch.empty(N, dtype=d, device="cuda"), torch.empty_like(dy)
            if part == "dx":
                return lambda: t._layer_norm_bwd_dx_fused[(M,)](
                    dx, dy, dw_, db_, x, w, mean, rstd, locks, N, N, BLOCK_SIZE_N=4096,
                    GROUP_SIZE_M=group, num_warps=8)
            return lambda: t._layer_norm_bwd_dwdb[(-(-N // 128),)](
                dw_, db_, dw, db, group, N, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
        out.append(Pair(f"t05 layer_norm bwd {part} fp16 4096x4096", "tutorial 05", make))
    for Z, H, S, D, causal in ((4, 32, 1024, 64, True), (4, 32, 4096, 64, False),
                               (2, 16, 4096, 128, True)):
        def make(env, Z=Z, H=H, S=S, D=D, causal=causal):
            t = env.tut("06-fused-attention")
            q, k, v = (torch.randn(Z, H, S, D, device="cuda", dtype=torch.float16)
                       for _ in range(3))
            return lambda: t.attention(q, k, v, causal, 0.5, False)
        out.append(Pair(f"t06 attention fwd fp16 {Z}x{H}x{S}x{D}{' causal' if causal else ''}",
                        "tutorial 06", make, (("06-fused-attention", "_attn_fwd"),)))
    for part in ("preprocess", "bwd"):
        def make(env, part=part, Z=4, H=32, S=1024, D=64):
            t = env.tut("06-fused-attention")
            q, k, v, o, do = (torch.randn(Z, H, S, D, device="cuda", dtype=torch.float16)
                              for _ in range(5))
            dq, dk, dv = (torch.empty_like(q) for _ in range(3))
            m, delta = (torch.randn(Z, H, S, device="cuda") for _ in range(2))
            if part == "preprocess":
                return lambda: t._attn_bwd_preprocess[(S // 128, Z * H)](
                    o, do, delta, Z, H, S, BLOCK_M=128, HEAD_DIM=D)
            return lambda: t._attn_bwd[(S // 128, 1, Z * H)](
                q, k, v, 0.5, do, dq, dk, dv, m, delta, *q.stride(), H, S, BLOCK_M1=32,
                BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, HEAD_DIM=D,
                num_warps=4, num_stages=5)
        out.append(Pair(f"t06 attention bwd {part} fp16 4x32x1024x64 causal", "tutorial 06",
                        make))
    for sizes in ((1024, 512, 256, 128), (1024,) * 8, (2048,) * 4):
        def make(env, sizes=sizes):
            t = env.tut("08-grouped-gemm")
            A = [torch.randn(n, n, device="cuda", dtype=torch.float16) for n in sizes]
            B = [torch.randn(n, n, device="cuda", dtype=torch.float16) for n in sizes]
            return lambda: t.group_gemm_fn(A, B)
        out.append(Pair(f"t08 grouped gemm fp16 {'+'.join(map(str, sizes))}", "tutorial 08", make,
                        (("08-grouped-gemm", "grouped_matmul_kernel"),)))
    for fn, kern, M, N, K in (("matmul", "matmul_kernel", 8192, 8192, 512),
                              ("matmul_persistent", "matmul_kernel_persistent", 8192, 8192, 512),
                              ("matmul_persistent", "matmul_kernel_persistent", 4096, 4096, 4096),
                              ("matmul_tma", "matmul_kernel_tma", 8192, 8192, 512),
                              ("matmul_tma_persistent", "matmul_kernel_tma_persistent", 8192, 8192,
                               512),
                              ("matmul_descriptor_persistent",
                               "matmul_kernel_descriptor_persistent", 8192, 8192, 512)):
        def make(env, fn=fn, M=M, N=N, K=K):
            t = env.tut("09-persistent-matmul")
            a = torch.randn(M, K, device="cuda", dtype=torch.float16)
            b = torch.randn(N, K, device="cuda", dtype=torch.float16)  # as the tutorial: N x K
            f = getattr(t, fn)
            if fn in ("matmul", "matmul_persistent"):
                return lambda: f(a, b.T)
            return lambda: f(a, b, False)
        out.append(Pair(f"t09 {fn} fp16 {M}x{N}x{K}", "tutorial 09", make,
                        (("09-persistent-matmul", kern),)))
    return out


def _liger_pairs():
    import torch
    out = []
    for M, N in ((4096, 4096), (8192, 2048)):
        def make(env, M=M, N=N):
            dyt = env.liger("dyt")
            x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
            alpha = torch.ones(1, device="cuda", dtype=torch.bfloat16)
            gamma, beta = (torch.randn(N, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            return lambda: dyt.liger_dyt_fwd(x, alpha, gamma, beta)
        out.append(Pair(f"liger dyt fwd bf16 {M}x{N}", "liger", make,
                        (("liger.dyt", "_dyt_fwd_kernel"),)))

    def make_bwd(env, M=4096, N=4096):
        dyt, sms = env.liger("dyt"), torch.cuda.get_device_properties(0).multi_processor_count
        x, dy = (torch.randn(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        alpha = torch.ones(1, device="cuda", dtype=torch.bfloat16)
        gamma = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        da = torch.zeros(sms, -(-N // 512), device="cuda")
        dg, db = (torch.empty(sms, N, device="cuda") for _ in range(2))
        dx = torch.empty_like(dy)
        grid = lambda meta: (-(-N // meta["BLOCK_N"]), sms)  # noqa: E731
        return lambda: dyt._dyt_bwd_kernel[grid](dy, dx, da, dg, db, x, alpha, gamma, True, M, N)
    out.append(Pair("liger dyt bwd bf16 4096x4096", "liger", make_bwd,
                    (("liger.dyt", "_dyt_bwd_kernel"),)))
    for train in (True, False):
        def make(env, train=train, B=4, S=1024, dim=2048, hidden=5632):
            mlp = env.liger("mlp")
            x = torch.randn(B, S, dim, device="cuda", dtype=torch.bfloat16)
            wg, wu = (torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16) / 45
                      for _ in range(2))
            return lambda: mlp.gemm_swiglu(x, wg, wu, 1.0, store_preact=train)
        kern = "_swiglu_kernel_forward" if train else "_swiglu_kernel_forward_inference"
        out.append(Pair(f"liger swiglu gemm{' (train)' if train else ' (inference)'} bf16 "
                        "4x1024x2048->5632", "liger", make, (("liger.mlp", kern),)))
    return out


def pairs():
    return _project_pairs() + _tutorial_pairs() + _liger_pairs()


# -- predict (CPU), measure (GPU), judge ----------------------------------------------------------

def _write(path, data):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1))


def _selected(args):
    got = [p for p in pairs() if not args.only or any(s in p.name for s in args.only.split(","))]
    if not got:
        raise SystemExit(f"no pair matches --only {args.only!r}")
    return got


def predict_all(args):
    import minitriton
    from minitriton.runner import emulated
    out = {"gpu": args.gpu, "sample": args.sample, "date": str(datetime.date.today()),
           "commit": os.environ.get("TRITONLAB_COMMIT", ""), "pairs": {}}
    if Path(args.out).exists() and args.only:
        out["pairs"] = json.loads(Path(args.out).read_text())["pairs"]
    with emulated(args.gpu, "3.6.0", cuda_on_cpu=True):
        env = Env(args.tutorials)
        for pair in _selected(args):
            t0 = time.perf_counter()
            try:
                fn = pair.make(env)
                with minitriton.predicting(args.gpu, sample=args.sample) as got:
                    fn()
            except Exception as e:  # noqa: BLE001 - recorded, the other pairs go on
                out["pairs"][pair.name] = {"error": f"{type(e).__name__}: {e}"[:500]}
                print(f"{pair.name}: ERROR {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            row = {"source": pair.source, "seconds": sum(p.seconds for p in got),
                   "low": sum(p.prediction.low for p in got),
                   "high": sum(p.prediction.high for p in got),
                   "launches": [{"kernel": p.kernel, "grid": list(p.grid), "config": p.config,
                                 "seconds": p.seconds, "bound": p.prediction.bound,
                                 "launch": dataclasses.asdict(p.launch)} for p in got],
                   "rankings": {p.kernel: p.ranking for p in got if p.ranking},
                   "ranked_launches": {p.kernel: {label: dataclasses.asdict(launch)
                                                  for label, launch in p.ranked_launches.items()}
                                       for p in got if p.ranking},
                   "cpu_seconds": time.perf_counter() - t0}
            out["pairs"][pair.name] = row
            print(f"{pair.name}: {row['seconds'] * 1e6:.1f} us "
                  f"({', '.join(f'{p.kernel} {p.prediction.bound}' for p in got)}; "
                  f"{row['cpu_seconds']:.1f} s)", flush=True)
            _write(args.out, out)
    _write(args.out, out)


def _bench(fn):
    from triton.testing import do_bench
    fn()
    return do_bench(fn, warmup=10, rep=40, quantiles=[0.5, 0.2, 0.8])


def _compiled_resources(tuner, config):
    """The registers, spills and shared memory of the kernel Triton compiled for `config` (the
    compiler's own figures, to calibrate runtime/compiled.estimate against), or None. Looks
    through the JIT function's compile cache for the kernel of these constexprs, warps and
    stages."""
    fn = tuner
    while not hasattr(fn, "device_caches") and hasattr(fn, "fn"):
        fn = fn.fn  # through Autotuner and Heuristics to the JITFunction
    for entry in fn.device_caches.values():
        for compiled in reversed(list(entry[0].values())):
            md = compiled.metadata
            if (md.num_warps, md.num_stages) != (config.num_warps, config.num_stages):
                continue
            consts = {fn.arg_names[k[0]]: v for k, v in compiled.src.constants.items()
                      if isinstance(k, tuple) and len(k) == 1}
            if all(consts.get(name) == value for name, value in config.kwargs.items()):
                compiled._init_handles()
                return {"n_regs": compiled.n_regs, "n_spills": compiled.n_spills,
                        "shared": md.shared}
    return None


def _safely(f, *args):
    """f(*args), or the error's text (a measurement that failed is recorded, not fatal)."""
    try:
        return f(*args)
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e)[:200]}"


def measure_all(args):
    import torch
    import triton
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": triton.__version__, "date": str(datetime.date.today()),
           "commit": os.environ.get("TRITONLAB_COMMIT", ""), "pairs": {}}
    if Path(args.out).exists():
        out["pairs"] = json.loads(Path(args.out).read_text())["pairs"]
    env = Env(args.tutorials)
    start = time.perf_counter()
    for pair in _selected(args):
        if pair.name in out["pairs"] and "error" not in out["pairs"][pair.name] and \
                not args.again:
            continue
        if time.perf_counter() - start > args.budget:
            print(f"budget spent: {pair.name} and later not measured", flush=True)
            break
        t0 = time.perf_counter()
        try:
            fn = pair.make(env)
            ms = _bench(fn)
            row = {"source": pair.source, "median_ms": ms[0], "p20_ms": ms[1], "p80_ms": ms[2],
                   "device_ms": _safely(device_ms, fn, args.calls), "calls": args.calls,
                   "configs": {}}
            for key, attr in pair.tuned:
                tuner = getattr(env.modules[key], attr)
                configs, picked = list(tuner.configs), tuner.best_config
                timed, device, resources = {}, {}, {}
                try:
                    for c in configs:
                        tuner.configs = [c]
                        tuner.cache.clear()
                        try:
                            timed[config_label(c)] = _bench(fn)[0]
                            device[config_label(c)] = _safely(device_ms, fn, args.calls)
                            resources[config_label(c)] = _safely(_compiled_resources, tuner, c)
                        except Exception as e:  # noqa: BLE001 - out of resources, say
                            timed[config_label(c)] = f"{type(e).__name__}: {str(e)[:120]}"
                finally:
                    tuner.configs = configs
                    tuner.cache.clear()
                row["configs"][attr] = {"picked": config_label(picked), "ms": timed,
                                        "device_ms": device, "resources": resources}
        except Exception as e:  # noqa: BLE001 - recorded, the other pairs go on
            out["pairs"][pair.name] = {"error": f"{type(e).__name__}: {e}"[:500]}
            print(f"{pair.name}: ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
            _write(args.out, out)
            continue
        row["wall_s"] = time.perf_counter() - t0
        out["pairs"][pair.name] = row
        tuned = "".join(f"; {kernel}: {len(timed['ms'])} configs"
                        for kernel, timed in row["configs"].items())
        print(f"{pair.name}: {row['median_ms'] * 1e3:.1f} us{tuned} ({row['wall_s']:.1f} s)",
              flush=True)
        _write(args.out, out)


def _predicted(p, gpu, stored, picked=None):
    """A pair's predicted seconds and its ranking {kernel: [(label, seconds)]}: as stored, or
    (default) from the stored Launches by the model as it is now (runtime/perf_model.py). An
    autotuned kernel's launch is predicted in the configuration the GPU's autotuner picked
    (`picked`: {kernel: label}), so that both sides time the same program."""
    from minitriton.runtime.perf_model import Launch, predict, rank_key
    if stored:
        return p["seconds"], p["rankings"] or {}
    configs_of = p.get("ranked_launches") or {}
    seconds = 0.0
    for launch in p["launches"]:
        label = (picked or {}).get(launch["kernel"])
        shape = configs_of.get(launch["kernel"], {}).get(label) or launch["launch"]
        seconds += predict(Launch(**shape), gpu).seconds
    rankings = {}
    for kernel, configs in (p.get("ranked_launches") or {}).items():
        # in the autotuner's config order (the Launches were stored in it), so that ties
        # (rank_key) go to the first config, as the autotuner's choice does
        times = {label: predict(Launch(**d), gpu).seconds for label, d in configs.items()}
        rankings[kernel] = sorted(times.items(), key=lambda r: rank_key(r[1]))
    return seconds, rankings


def _measured(m, timing):
    """A pair's measured seconds: its kernels' device time (`device`), or do_bench's median."""
    if timing == "device" and isinstance(m.get("device_ms"), float):
        return m["device_ms"] / 1e3
    return m["median_ms"] / 1e3


def judge(args):
    pred = json.loads(Path(args.predicted).read_text())
    meas = json.loads(Path(args.measured).read_text())
    rows, picks = [], []
    how = "kernel device time (CUPTI)" if args.timing == "device" else "do_bench medians"
    lines = [f"Predicted ({pred['gpu']} constants{' as stored' if args.stored else ''}, "
             f"simulator with {pred['sample']} programs per launch, {pred['date']}) against "
             f"measured ({meas['gpu']}, torch {meas['torch']}, triton {meas['triton']}, "
             f"{meas['date']}), {how}.", "",
             "| pair | predicted us | measured us | measured / predicted | bound |",
             "|---|---|---|---|---|"]
    for name, m in meas["pairs"].items():
        p = pred["pairs"].get(name)
        if not p or "error" in p or "error" in m:
            lines.append(f"| {name} | {'error' if p and 'error' in p else '-'} | "
                         f"{'error' if 'error' in m else '-'} | | |")
            continue
        picked = {kernel: timed["picked"] for kernel, timed in m["configs"].items()}
        seconds, rankings = _predicted(p, pred["gpu"], args.stored, picked)
        t = _measured(m, args.timing)
        rows.append((name, t / seconds))
        bounds = "+".join(sorted({launch["bound"] for launch in p["launches"]}))
        lines.append(f"| {name} | {seconds * 1e6:.1f} | {t * 1e6:.1f} | {t / seconds:.2f} | "
                     f"{bounds} |")
        for kernel, timed in m["configs"].items():
            ranking = rankings.get(kernel)
            source = timed.get("device_ms") if args.timing == "device" else None
            times = {k: v for k, v in (source or timed["ms"]).items() if isinstance(v, float)}
            ranked = [label for label, _ in ranking or () if label in times]
            if not ranked:
                continue
            best = min(times[label] for label in ranked)
            median = statistics.median(times[label] for label in ranked)
            chosen = times[ranked[0]]
            gpu_pick = times.get(timed["picked"], float("nan"))
            picks.append((name, kernel, chosen / best, chosen / median, gpu_pick / best,
                          len(ranked)))
    within = sum(1 / 1.3 <= r <= 1.3 for _, r in rows)
    ratios = [r for _, r in rows]
    lines += ["", f"Within 1.3x: **{within} of {len(rows)}** pairs "
              f"({100 * within / max(1, len(rows)):.0f} %); geometric mean of measured / "
              f"predicted {math.exp(statistics.fmean(math.log(r) for r in ratios)):.2f}; "
              f"10th-90th percentile {_quantile(ratios, 0.1):.2f}-{_quantile(ratios, 0.9):.2f}.",
              "", "| autotuned pair | kernel | configs | CPU pick / GPU best | CPU pick / median | "
              "GPU autotuner's pick / best |", "|---|---|---|---|---|---|"]
    for name, kernel, best, median, gpu, n in picks:
        lines.append(f"| {name} | {kernel} | {n} | {best:.2f} | {median:.2f} | {gpu:.2f} |")
    good = sum(b <= 1.10 for _, _, b, _, _, _ in picks)
    never = sum(m <= 1.0 for _, _, _, m, _, _ in picks)
    lines += ["", f"CPU picks within 10 % of the GPU's best: **{good} of {len(picks)}** "
              f"({100 * good / max(1, len(picks)):.0f} %); no worse than the median "
              f"configuration: {never} of {len(picks)}."]
    text = "\n".join(lines)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    return within, len(rows), good, len(picks)


def _quantile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    i = q * (len(values) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return values[lo] + (values[hi] - values[lo]) * (i - lo)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("predict", "measure"):
        s = sub.add_parser(name)
        s.add_argument("--tutorials", required=True,
                       help="folder with Triton's tutorial files (python/tutorials)")
        s.add_argument("--out", default=f"{name}.json")
        s.add_argument("--only", help="only the pairs whose name contains one of these "
                                      "(comma-separated)")
    sub.choices["predict"].add_argument("--gpu", default="H200")
    sub.choices["predict"].add_argument("--sample", type=int, default=16,
                                        help="programs run per launch (0: all)")
    sub.choices["measure"].add_argument("--calls", type=int, default=10,
                                        help="calls whose device times give each median "
                                             "(more: less noise between near-equal configs)")
    sub.choices["measure"].add_argument("--again", action="store_true",
                                        help="measure the pairs --out already has again")
    sub.choices["measure"].add_argument("--budget", type=float, default=480,
                                        help="seconds after which no new pair starts")
    s = sub.add_parser("judge")
    s.add_argument("predicted")
    s.add_argument("measured")
    s.add_argument("--md", help="also write the tables to this file")
    s.add_argument("--timing", choices=("device", "do_bench"), default="device",
                   help="measured time: the kernels' device time (default) or do_bench's")
    s.add_argument("--stored", action="store_true",
                   help="the predictions as stored (default: the model now, on the stored "
                        "Launches)")
    sub.add_parser("list")
    args = p.parse_args(argv)
    if args.cmd == "list":
        for pair in pairs():
            print(f"{pair.name}{' (autotuned)' if pair.tuned else ''}")
        print(f"{len(pairs())} pairs")
    else:
        {"predict": predict_all, "measure": measure_all, "judge": judge}[args.cmd](args)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
