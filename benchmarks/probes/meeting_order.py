"""The pipelined exchange kernels' meetings as the GPU would run them, read on a CPU: softmax's
and RMSNorm's exchange forwards and RMSNorm's exchange backward with their row loops
software-pipelined (STAGES) and the meeting in inline PTX (PTX; kernels/_exchange.py),
compiled by real Triton for sm_90 at the configurations benchmarks/probes/exchange_pipelined.py
times, and for each launch the order of the meeting's steps in its PTX, whether the loop's
loads are copied ahead (cp.async) and how many groups of copies are still in flight while a
program waits at its meeting (N of the `cp.async.wait_group N` before the wait; a group is a
row's x in the forwards, one of a step's x, dy and rstd in the backward: Triton issues the
next copies at the end of the loop's body, so 2 stages keep none in flight there, 3 one row
or step), its registers, spilled stack and shared memory.

Each step of a PTX meeting carries a "// meet:" comment (publish, wait, read, leave). A right
kernel runs them in that order, row after row, with one wait and one leave a meeting. Found
with it (2026-12-07, session 46): Triton's pipeliner orders a loop's operations by their SSA
operands alone, and had put the arrival and the wait after the reads of the others'
statistics and the output's stores (a race on the GPU that no simulator run shows); the steps
now take each other's tokens (docs/decisions.md#exchange-pipelined).

    python benchmarks/probes/meeting_order.py --triton DIR [--src CHECKOUT] [--dtypes fp32,bf16]
        [--stages 2,3] [--check] [--quiet] [--out FILE.json]

DIR holds Triton's Linux wheel (`pip install --no-deps --target DIR triton==3.6.0`: it compiles
without a GPU). `make compile-check` runs it with --check: exit 1 where a launch does not
compile or its meeting is out of order."""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import compile_check  # noqa: E402 - the sm_90 compile helpers, shared
STEPS = ("publish", "wait", "read", "leave")
# (block, warps) of the forwards, as exchange_pipelined.py's default configs
FORWARD = ((8192, 8), (4096, 4), (4096, 8), (8192, 16), (2048, 4))


def order(ptx):
    """The meeting's steps in the order the PTX has them, repeats of one step (an asm per
    element) counted once."""
    seen = []
    for step in re.findall(r"// meet:(\w+)", ptx):
        if not seen or seen[-1] != step:
            seen.append(step)
    return seen


def in_flight(ptx):
    """Groups of cp.async copies (the loop's next rows) left in flight while a program
    waits at its meeting: N of the last `cp.async.wait_group N` before the wait (None: no
    copy waited for before it)."""
    before = ptx.split("// meet:wait", 1)[0]
    waits = re.findall(r"cp\.async\.wait_group\s+(\d+);", before)
    return int(waits[-1]) if waits else None


def in_order(steps, ptx=None):
    """Whether `steps` are whole meetings, each publish, wait, read, leave; with the `ptx`
    they came from, also one wait and one leave a meeting (an asm per element of a tensor
    token would count a program in more than once)."""
    whole = bool(steps) and len(steps) % 4 == 0 and all(
        steps[i:i + 4] == list(STEPS) for i in range(0, len(steps), 4))
    once = ptx is None or all(ptx.count(f"// meet:{step}\n") == len(steps) // 4
                              for step in ("wait", "leave"))
    return whole and once


def _import(src, triton_dir):
    sys.path[:0] = [str(Path(src) / "src"), str(Path(src) / "packages" / "minitriton" / "src"),
                    str(triton_dir)]
    os.environ["TRITONLAB_BACKEND"] = "triton"
    from tritonlab.kernels import rmsnorm, softmax
    return {"softmax": softmax.softmax_exchange_kernel,
            "rmsnorm fwd": rmsnorm.rmsnorm_fwd_exchange_kernel,
            "rmsnorm bwd": rmsnorm.rmsnorm_bwd_exchange_kernel}


def _signature(fn, consts, dtype):
    """Triton's specialization of a launch on fresh tensors of rows a multiple of 16 wide:
    pointers of `dtype` (fp32 for the statistics, rstd, dg's partial rows; int32 the
    counters), they and the row lengths divisible by 16, the other ints i32, eps fp32;
    `consts` the constexprs (the kernel's defaults for the others)."""
    signature, constants, attrs = {}, {}, {}
    wide = ("stats_ptr", "rstd_ptr", "dg_partial_ptr")
    for i, (name, param) in enumerate(zip(fn.arg_names, fn.params)):
        if param.is_constexpr:
            signature[name] = "constexpr"
            constants[name] = consts[name] if name in consts else param.default
        elif name.endswith("_ptr"):
            signature[name] = ("*i32" if name == "sync_ptr" else "*fp32" if name in wide
                               else "*" + dtype)
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "fp32" if name == "eps" else "i32"
            if name in ("n_cols", "row_stride"):
                attrs[(i,)] = [["tt.divisibility", 16]]
    return signature, constants, attrs


def compile_one(job):
    """One pipelined launch compiled for sm_90: its meeting's order, cp.async count and
    resources, or the compiler's error."""
    src, triton_dir, kernel, dtype, stages, block, warps, rows = job
    fn = _import(src, triton_dir)[kernel]
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    consts = dict(BLOCK_SIZE=block, PIECES=max(2, 65536 // block), ACC=tl.float32,
                  STAGES=stages, PTX=True, ROWS=rows, SPLIT=False)
    row = dict(kernel=kernel, dtype=dtype, stages=stages, block=block, warps=warps, rows=rows)
    try:
        signature, constants, attrs = _signature(fn, consts, dtype)
        compiled = triton.compile(ASTSource(fn, signature, constants, attrs),
                                  target=GPUTarget("cuda", 90, 32),
                                  options=dict(num_warps=warps))
    except Exception as e:  # noqa: BLE001 - the compiler's error is the finding
        return {**row, "error": f"{type(e).__name__}: {str(e).strip()[-300:]}"}
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from compile_check import _resources  # registers, spilled stack, shared memory
    cuobjdump = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    ptx = compiled.asm["ptx"]
    return {**row, **_resources(compiled, str(cuobjdump)), "order": order(ptx),
            "in_order": in_order(order(ptx), ptx),
            "cp_async": ptx.count("cp.async.cg.shared.global") + ptx.count(
                "cp.async.ca.shared.global"), "in_flight": in_flight(ptx)}


def jobs(src, triton_dir, dtypes, stages):
    """The launches: each forward at FORWARD's configs, the backward at every entry of the
    Hopper tuning without split meetings (its block, rows a step, warps)."""
    sys.path.insert(0, str(Path(src) / "src"))
    from tritonlab.kernels.tuning import TUNINGS
    t = TUNINGS["rmsnorm"][9]
    out = []
    for dtype in dtypes:
        size = 4 if dtype == "fp32" else 2
        for s in stages:
            for kernel in ("softmax", "rmsnorm fwd"):
                out += [(src, triton_dir, kernel, dtype, s, b, w, 1) for b, w in FORWARD]
            out += [(src, triton_dir, "rmsnorm bwd", dtype, s, e[1], t.bwd_exchange_warps,
                     e[2]) for e in t.bwd_exchange
                    if e[0] == size and not (e[4:] and e[4])]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    compile_check.probe_options(p, "a launch's meeting is out of order (or it did not compile)",
                                "the launches not compiled or out of order")
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--stages", default="2,3")
    a = p.parse_args(argv)
    todo = jobs(a.src, a.triton, a.dtypes.split(","), [int(s) for s in a.stages.split(",")])
    rows = compile_check.compile_in_pool(compile_one, todo, a.jobs)
    wrong = [r for r in rows if "error" not in r and not r["in_order"]]
    compile_check.print_rows(
        rows, wrong, a.quiet, a.out,
        lambda r: (f"{r['kernel']:11} {r['dtype']} s{r['stages']} {r['block']:5} "
                   f"w{r['warps']:<2}"
                   f"{' rows ' + str(r['rows']) if r['kernel'] == 'rmsnorm bwd' else ''}"),
        lambda r: (f"regs {r['registers']:3} stack {r['stack']:4} shared {r['shared']:6} "
                   f"cp.async {r['cp_async']:3} in flight at the wait {r['in_flight']}  "
                   f"{' '.join(r['order'])}{'' if r not in wrong else '  OUT OF ORDER'}"))
    print(f"{len(rows)} pipelined exchange launches, {sum('error' in r for r in rows)} not "
          f"compiled, {len(wrong)} with the meeting out of order, "
          f"{sum(r.get('cp_async') == 0 for r in rows)} not pipelined")
    return 1 if a.check and (wrong or any("error" in r for r in rows)) else 0


if __name__ == "__main__":
    sys.exit(main())
