"""Compile, on a CPU and with real Triton, every kernel launch a test run makes on minitriton:
the GPU compiler's errors, registers, spilled bytes and shared memory per launch before any
GPU time is spent.

    python benchmarks/compile_check.py --triton DIR [--cc 90] [--tuned] [--out FILE] \\
        [--max-spill BYTES] (--shapes | --configs | -- PYTEST_ARGS...)
    e.g. python benchmarks/compile_check.py --triton /tmp/tt36 --tuned -- \\
        tests/tritonlab/test_kernels.py -k rms

Triton's Linux wheel installs and compiles without a GPU (`pip install --no-deps --target DIR
triton==3.6.0`; its ptxas and cuobjdump come with it). Two processes:

1. pytest on the simulator (TRITONLAB_BACKEND=sim) records each launch's specialization as
   Triton would make it (minitriton's `_specialization`: argument types, constexprs, ints
   equal to 1) and its num_warps / num_stages. `--tuned` plans with the GPU's tunings
   (kernels/tuning.py `TUNINGS` for compute capability `--cc`) in place of the simulator's, so
   the constexprs compiled are the GPU's (stages, exchange pieces, blocks); the simulator then
   runs those larger programs.
2. the same kernels imported with TRITONLAB_BACKEND=triton and real Triton from DIR, each
   distinct launch compiled by `triton.compile` for `GPUTarget("cuda", cc, 32)`, with pointers
   and multiples of 16 marked divisible by 16 (as a GPU launch of fresh allocations would
   specialise them), and the cubin's resources read by cuobjdump.

Prints one line per distinct launch (kernel, constexprs, warps: registers, spill stack, shared
memory, or the compiler's error) and exits 1 if any failed to compile. Kernels defined outside
tritonlab (a test file's own) are listed as skipped. What it cannot say: whether the code is
right on the GPU, or fast; a kernel that compiles can still fail at run time (a bad address,
a deadlock)."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = [str(ROOT / "src"), str(ROOT / "packages" / "minitriton" / "src")]
# shared memory a block may opt into, per compute capability major (CUDA's occupancy tables)
SHARED_OPTIN = {80: 166912, 86: 101376, 89: 101376, 90: 232448, 100: 232448}

# phase 1, run in a child process: pytest on the simulator with every launch recorded
RECORD = r'''
import json, os, sys
import minitriton.runtime.jit as jit
import minitriton.runtime.launch as L
from minitriton.types import dtype as sim_dtype
seen, out = {}, sys.argv[1]
cc = int(os.environ["COMPILE_CHECK_CC"]) if os.environ.get("COMPILE_CHECK_CC") else None

def value(v):
    if isinstance(v, sim_dtype):
        return {"dtype": v.name}
    if isinstance(v, jit.JITFunction):
        return {"jit": [v.__module__, v.__name__]}
    if hasattr(v, "value") and type(v).__name__ == "constexpr":
        return value(v.value)
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, tuple):
        return {"tuple": [value(x) for x in v]}
    raise TypeError(type(v).__name__)

real_launch = jit.launch
dry = os.environ.get("COMPILE_CHECK_DRY")  # "shapes" or "configs": planned, not run
def launch(kernel, grid, args, kwargs):
    try:
        spec = L._specialization(kernel, args, dict(kwargs))
        named, options = L._bind(kernel, args, dict(kwargs))
        divisible = [n for n, t in spec.signature.items()
                     if t.startswith("*") or (t in ("i32", "i64") and int(named[n]) % 16 == 0)]
        rec = {"module": kernel.__module__, "kernel": kernel.__name__,
               "signature": spec.signature,
               "constants": {k: value(v) for k, v in spec.constants.items()},
               "divisible": divisible,
               "options": {k: options[k] for k in ("num_warps", "num_stages", "launch_pdl")
                           if options.get(k) is not None}}
        key = json.dumps(rec, sort_keys=True)
        seen.setdefault(key, rec)
    except TypeError as e:
        seen.setdefault(kernel.__name__ + str(e), {"module": kernel.__module__,
                        "kernel": kernel.__name__, "skip": f"argument not recordable: {e}"})
    if dry:  # recorded only: the plan decides the constexprs by shape, not by data
        return None
    return real_launch(kernel, grid, args, kwargs)
jit.launch = launch

if cc is not None:  # plan with the GPU's tunings
    from tritonlab.kernels import tuning
    real = tuning.tuning_for_capability
    tuning.tuning_for.cache_clear()
    tuning.tuning_for_capability = lambda kind, capability: real(kind, (cc, 0))
if os.environ.get("COMPILE_CHECK_PDL"):  # RMSNorm's launches with programmatic dependent launch
    import dataclasses
    from tritonlab.kernels import tuning
    unset = tuning.tuning_for_capability
    tuning.tuning_for.cache_clear()
    tuning.tuning_for_capability = lambda kind, capability: (
        dataclasses.replace(unset(kind, capability), pdl=True) if kind == "rmsnorm"
        else unset(kind, capability))

if dry == "configs":  # every configuration the GPU's autotuners may try, tiny inputs
    import dataclasses
    import itertools
    import torch
    from tritonlab.kernels import attention as at, matmul as mm
    from tritonlab.kernels.tuning import tuning_for
    t = tuning_for("attention", -1)  # -1: the CPU, whose tuning --cc replaced above
    for dtype in [getattr(torch, {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[n])
                  for n in os.environ["COMPILE_CHECK_DTYPES"].split(",")]:
        # sequences of whole tiles (the kernels' EVEN_* variants: no masked tail loop) and
        # of a tail (136: no block of 16 or more divides it)
        for d, n in itertools.product((64, 128), (128, 136)):
            q = torch.empty(1, 1, n, d, dtype=dtype)
            o, lse = q.clone(), torch.empty(1, 1, n)
            for causal in (False, True):
                for impl, name in (("pointers", "fwd"), ("tma", "fwd_tma")):
                    for cfg in t.configs(name, d):
                        at.attention_forward(q, q, q, causal, tiles=cfg, impl=impl)
                kept = at.tuning_for  # the split forward with either combine (split_combine)
                for combine in ("last", "kernel"):
                    at.tuning_for = lambda kind, device, c=dataclasses.replace(
                        t, split_combine=combine): c if kind == "attention" else kept(kind, device)
                    try:
                        for cfg in t.configs("fwd", d):
                            at.attention_forward(q, q, q, causal, tiles=cfg, impl="split")
                    finally:
                        at.tuning_for = kept
                dkdv, dq = t.configs("dkdv", d), t.configs("dq", d)
                pairs = [(a, dq[0]) for a in dkdv] + [(dkdv[0], b) for b in dq[1:]]
                for impl in ("two-kernel", "two-kernel-tma"):
                    for a, b in pairs:
                        at.attention_backward(q, q, q, q, o, lse, causal,
                                              tiles={"dkdv": a, "dq": b}, impl=impl)
                for impl in ("atomic", "atomic-tma"):
                    for cfg in t.configs("dkdv_atomic", d):
                        at.attention_backward(q, q, q, q, o, lse, causal, tiles={"dkdv": cfg},
                                              impl=impl)
        # the Gluon forward and backward (16-bit, whole tiles) at every head dim the
        # assignment's table has
        for d, causal in itertools.product((16, 32, 64, 128), (False, True)):
            if dtype != torch.float32:
                q = torch.empty(1, 1, 128, d, dtype=dtype)
                at.attention_forward(q, q, q, causal, impl="gluon",
                                     tiles=t.gluon_small if d <= 64 else t.gluon_large)
                size = "small" if d <= 64 else "large"
                at.attention_backward(q, q, q, q, q, torch.empty(1, 1, 128), causal,
                                      impl="gluon",
                                      tiles={"dkdv": getattr(t, f"gluon_dkdv_{size}"),
                                             "dq": getattr(t, f"gluon_dq_{size}")})
        m = tuning_for("matmul", -1)
        a = torch.empty(256, 256, dtype=dtype)
        for cfg in mm._configs(m.configs, m.group_m):
            for act in mm.ACTIVATIONS:
                mm.launch(mm.matmul_kernel, (1,), a, a, a, 256, 256, 256, 256, 1, 256, 1, 256, 1,
                          ACTIVATION=act, **cfg.all_kwargs())
        if dtype != torch.float32:  # the TMA kernel takes 16-bit inputs only
            for cfg in mm._configs(m.tma_configs, m.group_m):
                kw = cfg.all_kwargs()
                bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
                desc = mm.TensorDescriptor.from_tensor
                descs = (desc(a, [bm, bk]), desc(a, [bk, bn]), desc(a, mm._c_block(bm, bn)))
                mm.launch(mm.matmul_tma_kernel, (1,), *descs, 256, 256, 256, ACTIVATION="relu",
                          **kw)
    code = 0
elif dry:  # benchmarks/kernels.py's ops at its shapes, forward and backward
    import torch
    from tritonlab.kernels import _exchange, elementwise as ew, rmsnorm as rn, rowsum as rs
    from tritonlab.kernels import softmax as sm
    # a row's exchange pieces as on an H100 or H200 (one per SM, 132), not the simulator's 64:
    # nothing runs here, so the GPU's plan of the widest rows is the one compiled
    _exchange.max_pieces = lambda x: 132
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.empty(1 << 12, dtype=dtype)
        ew.add(a, a), ew.gelu(a)
        for M, N in json.loads(os.environ["COMPILE_CHECK_SHAPES"]):
            x, g = torch.empty(M, N, dtype=dtype), torch.empty(N, dtype=dtype)
            sm.softmax(x), rs.row_sum(x)
            rn._plan(x, g).forward(x, g, 1e-6)
            rn._plan(x, g).backward(x, x, g, torch.empty(M, dtype=torch.float32))
            sm._softmax_bwd_impl(x, x, -1, None, None, None)
    code = 0
else:
    import pytest
    code = pytest.main(sys.argv[2:] + ["-p", "no:cacheprovider", "-q"])
json.dump(list(seen.values()), open(out, "w"), indent=1)
sys.exit(0 if code in (0, 5) else int(code))
'''


# benchmarks/kernels.py's row shapes (--shapes)
SHAPES = [(8192, 4096), (32768, 1024), (4096, 16384), (1024, 65536), (256, 262144)]


def record(pytest_args, out, cc, tuned, shapes=None, configs=None, pdl=False):
    """Phase 1 in a child process: `pytest_args` run on the simulator, or (`shapes`) kernels.py's
    ops at those shapes, or (`configs`: dtype names, e.g. ["fp16", "bf16"]) every autotune
    configuration; the launches written to `out` (JSON). `pdl`: RMSNorm's tuning with
    programmatic dependent launch on."""
    env = {**os.environ, "TRITONLAB_BACKEND": "sim",
           "PYTHONPATH": os.pathsep.join(PATHS + [os.environ.get("PYTHONPATH", "")])}
    if tuned:
        env["COMPILE_CHECK_CC"] = str(cc)
    if pdl:
        env["COMPILE_CHECK_PDL"] = "1"
    if shapes:
        env["COMPILE_CHECK_DRY"], env["COMPILE_CHECK_SHAPES"] = "shapes", json.dumps(shapes)
    if configs:
        env["COMPILE_CHECK_DRY"], env["COMPILE_CHECK_DTYPES"] = "configs", ",".join(configs)
    done = subprocess.run([sys.executable, "-c", RECORD, out, *pytest_args], env=env, cwd=ROOT)
    if done.returncode not in (0,):
        print(f"compile_check: the tests under the simulator ended with {done.returncode} "
              f"(the launches they made are still checked)", file=sys.stderr)


def _resources(compiled, cuobjdump):
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        text = subprocess.run([cuobjdump, "--dump-resource-usage", f.name],
                              capture_output=True, text=True).stdout
    fields = dict(item.split(":", 1) for line in text.splitlines() if "REG:" in line
                  for item in line.split())
    return {"registers": int(fields.get("REG", -1)), "stack": int(fields.get("STACK", -1)),
            "shared": compiled.metadata.shared}


def probe_options(parser, check, quiet):
    """The options of the probes that compile launches for sm_90 on a CPU
    (probes/sass_loops.py, probes/meeting_order.py): the folder holding real Triton, the
    checkout whose kernels compile, processes, a JSON of the rows, --check (exit 1 also where
    `check`) and --quiet (print only `quiet`, and the summary)."""
    parser.add_argument("--triton", required=True, help="folder holding real Triton")
    parser.add_argument("--src", default=str(ROOT), help="the checkout whose kernels compile")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--out", help="write the rows here (JSON)")
    parser.add_argument("--check", action="store_true", help=f"exit 1 also where {check}: "
                        "`make compile-check` runs it")
    parser.add_argument("--quiet", action="store_true", help=f"print only {quiet}, and the "
                        "summary")


def compile_in_pool(fn, jobs, processes):
    """fn over jobs in `processes` spawned processes (each imports real Triton afresh)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fn, jobs))


def print_rows(rows, flagged, quiet, out, head, body):
    """Each row a line: head(row), then its compiler's error or body(row); --quiet: only the
    rows not compiled or `flagged`. `out`: the rows as JSON there."""
    for r in rows:
        if quiet and "error" not in r and r not in flagged:
            continue
        print(f"{head(r)} ERROR {r['error'][:100]}" if "error" in r else f"{head(r)} {body(r)}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


def compile_all(records, cc):
    """Each record compiled by real Triton (imported here: TRITONLAB_BACKEND=triton)."""
    import importlib

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    dtypes = {getattr(tl, n).name: getattr(tl, n) for n in dir(tl)
              if isinstance(getattr(tl, n), tl.dtype)}
    cuobjdump = str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump")
    target = GPUTarget("cuda", cc, 32)

    def real(v):
        if isinstance(v, dict):
            if "dtype" in v:
                return dtypes[v["dtype"]]
            if "jit" in v:
                return getattr(importlib.import_module(v["jit"][0]), v["jit"][1])
            if "tuple" in v:
                return tuple(real(x) for x in v["tuple"])
        return v

    results = []
    for rec in records:
        row = {**rec}
        if "skip" in rec:
            results.append(row)
            continue
        if not rec["module"].startswith(("tritonlab", "lectures")):
            row["skip"] = "not a tritonlab kernel"
            results.append(row)
            continue
        try:
            fn = getattr(importlib.import_module(rec["module"]), rec["kernel"])
            names = fn.arg_names
            attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in rec["divisible"]}
            source = GluonASTSource if getattr(fn, "is_gluon", lambda: False)() else ASTSource
            src = source(fn, signature=rec["signature"],
                         constexprs={k: real(v) for k, v in rec["constants"].items()},
                         attrs=attrs)
            compiled = triton.compile(src, target=target, options=rec["options"])
            row.update(_resources(compiled, cuobjdump))
            early = access_before_wait(compiled.asm["ptx"])
            if early:
                row["error"] = (f"PDL: {early} before griddepcontrol.wait (a launch that may "
                                f"start before the one ahead of it ends reads or writes "
                                f"memory before waiting for it)")
        except Exception as e:  # noqa: BLE001 - the compiler's error is the finding
            row["error"] = f"{type(e).__name__}: {str(e).strip()[-600:]}"
        results.append(row)
    return results


# PTX instructions that touch global memory (or shared memory filled from it)
MEMORY = re.compile(r"^\s*(?:@!?%?\w+\s+)?((?:ld|st|atom|red|cp\.async|prefetch)\.[\w.:]*)",
                    re.M)


def access_before_wait(ptx):
    """The first memory instruction of `ptx` that comes before its griddepcontrol.wait, or
    None (no such instruction, or no wait: a launch without programmatic dependent launch).
    Parameter loads (ld.param) are not memory another kernel writes."""
    if "griddepcontrol.wait" not in ptx:
        return None
    for m in MEMORY.finditer(ptx.split("griddepcontrol.wait", 1)[0]):
        if not m.group(1).startswith(("ld.param", "ld.shared", "st.shared")):
            return m.group(1)
    return None


def element_type(type_string):
    """The element type of a pointer's or descriptor's type string ('*bf16', '*ki32',
    'tensordesc<fp16[16, 32]>' -> bf16, i32, fp16); other strings as they are."""
    return type_string.lstrip("*k").removeprefix("tensordesc<").split("[")[0]


def _label(row):
    consts = ", ".join(f"{k}={json.dumps(v)}" for k, v in row.get("constants", {}).items()
                       if v is not None and k not in ("ACC",))
    opts = ", ".join(f"{k}={v}" for k, v in row.get("options", {}).items())
    # the element types of its pointers, as a name suffix: kernel<bf16> or kernel<bf16,fp32>
    types = sorted({element_type(t) for t in row.get("signature", {}).values()
                    if t.startswith(("*", "tensordesc<"))} - {"i32", "u1"})
    return (f"{row['kernel']}<{','.join(types)}>"
            f"[{consts}{'; ' if consts and opts else ''}{opts}]")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--triton", help="folder holding real Triton (pip install --target DIR)")
    p.add_argument("--cc", type=int, default=90, help="compute capability major (90: Hopper)")
    p.add_argument("--tuned", action="store_true",
                   help="plan with the GPU's tunings (TUNINGS[kind][cc]), not the simulator's")
    p.add_argument("--out", help="write every launch's result here (JSON)")
    p.add_argument("--records", help="compile these recorded launches (skip the tests)")
    p.add_argument("--shapes", action="store_true",
                   help="in place of tests: benchmarks/kernels.py's ops (add, gelu, softmax "
                        "and its backward, row_sum, rmsnorm forward and backward) at its "
                        "shapes, launches planned and recorded but not run (with --tuned: "
                        "what the GPU launches there)")
    p.add_argument("--configs", action="store_true",
                   help="in place of tests: every configuration the GPU's autotuners may try "
                        "(attention's and matmul's tunings for --cc, --dtypes; head dims 64 "
                        "and 128, causal and not), planned and recorded, not run")
    p.add_argument("--pdl", action="store_true",
                   help="with --tuned: RMSNormTuning.pdl on (programmatic dependent launch); "
                        "every launch whose PTX has griddepcontrol.wait is also checked to "
                        "touch no memory before it")
    p.add_argument("--dtypes", default="fp16,bf16,fp32",
                   help="--configs: the input dtypes (default fp16,bf16,fp32)")
    p.add_argument("--max-spill", type=int, metavar="BYTES",
                   help="also fail (exit 1) on launches that spill more than BYTES of stack "
                        "a thread and fit in shared memory (the tunings' rule in 16 bits: "
                        "512, docs/attention.md#tiles-and-tuning)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="compiling processes (default: one per core)")
    p.add_argument("--quiet", action="store_true",
                   help="print only the failures, the spills over --max-spill and the summary")
    p.add_argument("--compile-only", help=argparse.SUPPRESS)  # the child process's phase 2
    args = p.parse_args(argv)
    if args.compile_only:
        records = json.loads(Path(args.compile_only).read_text())
        Path(args.compile_only + ".compiled").write_text(
            json.dumps(compile_all(records, args.cc)))
        return 0
    if not args.triton:
        p.error("give --triton DIR: a folder with Triton's Linux wheel installed "
                "(pip install --no-deps --target DIR triton==3.6.0)")
    if not (Path(args.triton) / "triton").is_dir():
        p.error(f"no triton package in {args.triton}")
    with tempfile.TemporaryDirectory() as tmp:
        recorded = args.records or str(Path(tmp) / "launches.json")
        if not args.records:
            record(rest, recorded, args.cc, args.tuned or args.configs,
                   SHAPES if args.shapes else None,
                   args.dtypes.split(",") if args.configs else None, args.pdl)
            if not Path(recorded).exists():
                print("compile_check: the simulator's run recorded nothing (its error is "
                      "above)", file=sys.stderr)
                return 1
        env = {**os.environ, "TRITONLAB_BACKEND": "triton",
               "PYTHONPATH": os.pathsep.join([args.triton] + PATHS)}
        # the launches dealt round-robin to `--jobs` compiling processes
        launches = json.loads(Path(recorded).read_text())
        parts = [launches[i::args.jobs] for i in range(max(1, min(args.jobs, len(launches))))]
        children = []
        for i, part in enumerate(parts):
            path = Path(tmp) / f"part{i}.json"
            path.write_text(json.dumps(part))
            children.append((path, subprocess.Popen(
                [sys.executable, __file__, "--cc", str(args.cc), "--compile-only", str(path)],
                env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)))
        results = []
        for path, child in children:
            err = child.communicate()[1]
            if child.returncode:
                print(err[-3000:], file=sys.stderr)
                return child.returncode
            results += json.loads(Path(str(path) + ".compiled").read_text())
    failed = [r for r in results if "error" in r]
    limit = SHARED_OPTIN.get(args.cc)  # shared memory a block may opt into
    spills = [] if args.max_spill is None else [  # of launches that can run: shared fits
        r for r in results if "error" not in r and "skip" not in r
        and r["stack"] > args.max_spill and (limit is None or r["shared"] <= limit)]
    spilled = {id(r) for r in spills}
    for r in sorted(results, key=lambda r: (r["kernel"], _label(r))):
        if args.quiet and "error" not in r and id(r) not in spilled:
            continue
        if "skip" in r:
            print(f"skipped  {r['kernel']}: {r['skip']}")
        elif "error" in r:
            print(f"FAILED   {_label(r)}\n         {r['error']}")
        else:
            spill = f", {r['stack']} B stack (spills)" if r["stack"] > 0 else ""
            if id(r) in spilled:
                spill += f" [over --max-spill {args.max_spill}]"
            over = (f" (over the {limit} B a block may have: Triton raises OutOfResources at "
                    f"launch; an autotuner skips the config)" if limit and r["shared"] > limit
                    else "")
            print(f"ok       {_label(r)}: {r['registers']} registers{spill}, "
                  f"{r['shared']} B shared{over}")
    print(f"\n{len(results) - len(failed)} of {len(results)} distinct launches compiled for "
          f"sm_{args.cc}" + (f"; {len(failed)} failed" if failed else "")
          + (f"; {len(spills)} spill more than {args.max_spill} B a thread" if spills else ""))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 1 if failed or spills else 0


if __name__ == "__main__":
    sys.exit(main())
