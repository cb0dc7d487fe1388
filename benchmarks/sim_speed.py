"""Simulator speed: minitriton (lockstep and sequential) against Triton's own interpreter.

    python benchmarks/sim_speed.py [--repeats N] [--json FILE] [--only TEXT] [--no-sequential]
                                   [--programs TUTORIALS_DIR] [--attention-tests]
                                   [--program-timeout S]

Same kernels (the lecture's, from tests/minitriton/corpus/kernels.py, loaded once per implementation),
same inputs, one process. Triton's interpreter (TRITON_INTERPRET=1) is timed where `triton` is
importable. Prints a table of median wall times and the ratios, and the process's peak memory.

Whole programs, each in a process of its own, once per side (wall time, peak memory):
`--programs DIR` runs Triton's tutorials 03, 06 and 08 from DIR (a Triton checkout's
python/tutorials, fetched outside this repository) with `python -m minitriton --small`, and on
the interpreter under the same rule for benchmarks (INTERPRETER_SMALL: each Benchmark's two
smallest x values, do_bench one call); `--attention-tests` runs the project's own
tests/tritonlab/test_attention.py with TRITONLAB_BACKEND=sim and =interpret. A side that runs
past `--program-timeout` seconds shows as "> S".
"""
import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "packages/minitriton/src"), str(ROOT / "tests/minitriton")]

import numpy  # noqa: E402
import torch  # noqa: E402

import minitriton  # noqa: E402
import minitriton.language as mtl  # noqa: E402
from corpus import load  # noqa: E402


def cases():
    """(label, make) pairs; make(k) returns a no-argument launch of corpus module k."""
    def add(k):
        n = 1 << 20
        x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
        return lambda: k.add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)

    def gelu(k):
        n = 1 << 20
        x, y = torch.randn(n), torch.empty(n)
        return lambda: k.gelu_kernel[(n // 1024,)](x, y, n, BLOCK=1024)

    def softmax(m, n):
        def make(k):
            x = torch.randn(m, n)
            y = torch.empty_like(x)
            block = 1 << (n - 1).bit_length()
            return lambda: k.softmax_kernel[(m,)](x, y, x.stride(0), n, BLOCK=block)
        return make

    def row_sum(k):
        x, out = torch.randn(256, 4096), torch.empty(256)
        return lambda: k.row_sum_kernel[(256,)](x, out, 4096, x.stride(0), BLOCK=1024)

    def matmul(n, transpose_a=False):
        def make(k):
            a = torch.randn(n, n)
            if transpose_a:
                a = a.t()
            b, c = torch.randn(n, n), torch.empty(n, n)
            grid = (n // 64, n // 64)
            return lambda: k.matmul_kernel[grid](
                a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1), BM=64, BN=64, BK=32, IEEE=False)
        return make

    def rmsnorm(k):
        x, g = torch.randn(1024, 1024), torch.randn(1024)
        y, rstd = torch.empty_like(x), torch.empty(1024)
        return lambda: k.rmsnorm_fwd_kernel[(1024,)](x, g, y, rstd, 1024, 1e-6, BLOCK=1024)

    return [("add n=2^20, BLOCK 1024", add), ("gelu n=2^20, BLOCK 1024", gelu),
            ("softmax 300x781", softmax(300, 781)), ("softmax 4096x1024", softmax(4096, 1024)),
            ("row-sum 256x4096, BLOCK 1024", row_sum),
            ("matmul+relu 256^3, 64x64x32", matmul(256)),
            ("matmul+relu 512^3, 64x64x32", matmul(512)),
            ("matmul+relu 256^3, A transposed", matmul(256, True)),
            ("matmul+relu 512^3, A transposed", matmul(512, True)),
            ("rmsnorm fwd 1024x1024", rmsnorm)]


def patch_interpreter_index(interpreter):
    """Triton 3.6's interpreter turns a scalar argument into a 1-element array and its
    `__index__` calls int() on it, which NumPy >= 2.3 rejects (`range(0, n_cols, BLOCK)` with a
    runtime n_cols fails). Take the one element instead; nothing else changes."""
    original = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))
    interpreter._patch_lang_tensor = patched


# Triton's testing under minitriton's --small rule (minitriton/testing.py, `small`): the two
# smallest x values of each Benchmark, one call per do_bench; run before the program
INTERPRETER_SMALL = """
import math, time, triton.testing as tt
_report = tt.perf_report
def _mag(x):
    return math.prod(abs(v) for v in (x if isinstance(x, (list, tuple)) else [x])
                     if isinstance(v, (int, float)) and not isinstance(v, bool))
def perf_report(benchmarks):
    for b in (benchmarks if isinstance(benchmarks, list) else [benchmarks]):
        keep = sorted(range(len(b.x_vals)), key=lambda i: _mag(b.x_vals[i]))[:2]
        b.x_vals = [b.x_vals[i] for i in sorted(keep)]
    return _report(benchmarks)
def do_bench(fn, *args, quantiles=None, return_mode="mean", **kwargs):
    t = time.perf_counter(); fn(); ms = (time.perf_counter() - t) * 1e3
    return [ms] * len(quantiles) if quantiles and len(quantiles) > 1 else ms
tt.perf_report, tt.do_bench = perf_report, do_bench
"""
TUTORIALS = ("03-matrix-multiplication.py", "06-fused-attention.py", "08-grouped-gemm.py")


def run_program(command, cwd, env, timeout):
    """(wall seconds or None past the timeout, peak MiB of the child, the output's tail)."""
    env = {**os.environ, **env}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, "timed out"
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    tail = (done.stdout + done.stderr)[-400:]
    if done.returncode:
        return float("nan"), None, f"exit {done.returncode}: {tail}"
    return wall, (peak / 1024 if peak > before else None), tail


def program_rows(args):
    """The whole-program rows: (label, minitriton side, interpreter side) commands."""
    env_src = {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                              str(ROOT / "packages/minitriton/src")])}
    rows = []
    if args.programs:
        folder = Path(args.programs)
        for name in TUTORIALS:
            path = folder / name
            if not path.exists():
                raise SystemExit(f"--programs: no {name} in {folder}")
            sim = ([sys.executable, "-m", "minitriton", "--small", name], {})
            interp = ([sys.executable, "-c", INTERPRETER_SMALL + "\nimport runpy, sys\n"
                       f"sys.argv = [{name!r}]\nrunpy.run_path({name!r}, run_name='__main__')"],
                      {"TRITON_INTERPRET": "1"})
            rows.append((f"tutorial {name[:2]} --small", folder, sim, interp))
    if args.attention_tests:
        test = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "tests/tritonlab/test_attention.py"]
        rows.append(("tests/tritonlab/test_attention.py", ROOT,
                     (test, {**env_src, "TRITONLAB_BACKEND": "sim"}),
                     (test, {**env_src, "TRITONLAB_BACKEND": "interpret"})))
    return rows


def run_programs(args):
    rows = []
    for label, cwd, (sim_cmd, sim_env), (int_cmd, int_env) in program_rows(args):
        sim = run_program(sim_cmd, cwd, sim_env, args.program_timeout)
        interp = run_program(int_cmd, cwd, int_env, args.program_timeout)

        def show(side):
            wall = side[0]
            return f"> {args.program_timeout:.0f}s" if wall is None else f"{wall:.1f}s"
        ratio = ""
        if sim[0] and interp[0] and math.isfinite(sim[0]) and math.isfinite(interp[0]):
            ratio = f"{interp[0] / sim[0]:.1f}x"
        elif sim[0] and interp[0] is None:
            ratio = f"> {args.program_timeout / sim[0]:.1f}x"
        print(f"{label:<36}{show(sim):>13}{show(interp):>13}{ratio:>13}   peak MiB "
              f"{sim[1] or 0:.0f} / {interp[1] or 0:.0f}", flush=True)
        for side, (wall, _, tail) in (("minitriton", sim), ("interpreter", interp)):
            if wall is None or not math.isfinite(wall):
                print(f"    {side}: {tail.strip().splitlines()[-1] if tail.strip() else ''}")
        rows.append({"program": label, "minitriton": sim[0], "interpreter": interp[0],
                     "minitriton_peak_mib": sim[1], "interpreter_peak_mib": interp[1]})
    return rows


def timed(fn, repeats):
    fn()  # warm-up: compilation, caches
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--only", help="run only the kernels whose label contains this text")
    parser.add_argument("--no-sequential", action="store_true", help="skip the sequential executor")
    parser.add_argument("--programs", metavar="DIR",
                        help="Triton's python/tutorials folder: add tutorials 03, 06 and 08")
    parser.add_argument("--attention-tests", action="store_true",
                        help="add the project's attention tests as a whole-program row")
    parser.add_argument("--program-timeout", type=float, default=900,
                        help="seconds a whole program may run on one side (default 900)")
    parser.add_argument("--no-kernels", action="store_true",
                        help="only the whole-program rows")
    args = parser.parse_args()
    sim = load(minitriton, mtl)
    impls = {"lockstep": (sim, minitriton.Settings(executor="lockstep"))}
    if not args.no_sequential:
        impls["sequential"] = (sim, minitriton.Settings(executor="sequential"))
    try:
        import triton
        import triton.language as tl
        from triton.runtime import interpreter
        patch_interpreter_index(interpreter)
        impls["interpreter"] = (load(triton, tl), None)
        interp = f"triton {triton.__version__} interpreter"
    except ImportError:
        interp = "triton not installed: no interpreter column"
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"torch {torch.__version__}, numpy {numpy.__version__}, {interp}; median of "
          f"{args.repeats} runs")
    rows = []
    header = f"{'kernel':<36}" + "".join(f"{n:>13}" for n in impls)
    if "interpreter" in impls:
        header += f"{'lock/interp':>13}" + (f"{'seq/interp':>12}" if "sequential" in impls else "")
    print(header)
    for label, make in cases():
        if args.no_kernels or (args.only and args.only not in label):
            continue
        row = {"kernel": label}
        for name, (module, settings) in impls.items():
            fn = make(module)
            if settings is not None:
                with minitriton.configure(executor=settings.executor):
                    row[name] = timed(fn, args.repeats)
            else:
                row[name] = timed(fn, args.repeats)
        line = f"{label:<36}" + "".join(f"{row[n]:>12.3f}s" for n in impls)
        if "interpreter" in impls:
            row["speedup_lockstep"] = row["interpreter"] / row["lockstep"]
            line += f"{row['speedup_lockstep']:>12.1f}x"
            if "sequential" in impls:
                row["speedup_sequential"] = row["interpreter"] / row["sequential"]
                line += f"{row['speedup_sequential']:>11.1f}x"
        print(line, flush=True)
        rows.append(row)
    if "interpreter" in impls and rows:
        for key in [k for k in ("lockstep", "sequential") if k in impls]:
            g = math.exp(statistics.mean(math.log(r[f"speedup_{key}"]) for r in rows))
            print(f"geometric mean speed-up, {key}: {g:.1f}x")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of the process: {peak:.0f} MiB")
    programs = []
    if args.programs or args.attention_tests:
        print(f"{'whole program (one run each)':<36}{'minitriton':>13}{'interpreter':>13}"
              f"{'interp/mt':>13}")
        programs = run_programs(args)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "peak_mib": peak,
                                               "programs": programs}, indent=1))


if __name__ == "__main__":
    main()
