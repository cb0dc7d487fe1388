"""Lecture 6 §2-3: measure before optimising, and measure right.

A matmul size sweep (flat while fixed costs dominate, then ~n^3), the pitfalls measured live
(no warm-up, no synchronisation, .item() every step), the profiler's view of the manual and the
built-in GeLU, and exercise 1's timing code fixed. Runs on CUDA, MPS or the CPU.
"""
import torch
import torch.nn.functional as F
from rich.console import Console

from tritonlab.cli.lecture import lecture_options, output_dir

lecture_options(__file__, __doc__)  # first: a bad TRITONLAB_BACKEND is one line

from tritonlab import bench  # noqa: E402
from tritonlab.bench.compare import describe_exponent  # noqa: E402
from tritonlab.bench.workloads import manual_gelu  # noqa: E402
from tritonlab.profile import count_ops, describe_ops, profile  # noqa: E402


console = Console(width=110)
device = bench.default_device()
out_dir = output_dir()
print(f"device: {device} ({bench.environment(device)['device_name']}), torch {torch.__version__}")
print(f"files: {out_dir.resolve()} (choose with --out DIR or TRITONLAB_OUT)\n")

# --- pitfalls first, so that one-time costs are still there to be seen
a = torch.randn(2048, 2048, device=device)
print(bench.first_run(lambda: (lambda: a @ a), device=device))
print(bench.no_sync(lambda: a @ a, device=device))
w = torch.randn(2048 if device != "cpu" else 512, 2048 if device != "cpu" else 512, device=device)
print(bench.item_in_loop(lambda: (w @ w).sum(), steps=20, device=device))
print()

# --- §2.3: time against size
sizes = [64, 256, 1024, 2048, 4096]
trials = 10 if device != "cpu" else 3
result = bench.sweep(lambda n: (lambda x=torch.randn(n, n, device=device): x @ x), sizes,
                     trials=trials, warmup=2, device=device)
console.print(result.table(title=f"matmul n x n fp32 on {device}"))
png = result.plot(out_dir / "lecture01_matmul_sweep.png", title=f"matmul time against n ({device})")
result.export(out_dir / "lecture01_matmul_sweep.csv", out_dir / "lecture01_matmul_sweep.json")
print(f"plot: {png}; growth {', '.join(describe_exponent(e) for e in result.exponents())}: flat "
      "while fixed costs dominate, then about n^3\n")

# --- §3: where the time goes
x = torch.randn(4096, 4096, device=device)
manual = count_ops(lambda: manual_gelu(x))
builtin = count_ops(lambda: F.gelu(x, approximate="tanh"))
print(f"manual GeLU runs {sum(manual.values())} operators: {describe_ops(manual)}")
print(f"F.gelu runs {sum(builtin.values())}: {describe_ops(builtin)}")
report = profile(lambda: manual_gelu(x))
console.print(report.table(by="device_time_us" if device == "cuda" else "cpu_time_us",
                           limit=8, title="profile of the manual GeLU"))
report.export_chrome_trace(out_dir / "lecture01_gelu_trace.json")
if device == "cuda":
    print("device kernels chosen for matmul at each size:")
    for n in (64, 256, 1024, 4096):
        m = torch.randn(n, n, device=device)
        kernels = [r.name for r in profile(lambda: m @ m).kernels()]
        print(f"  n = {n:>4}: {', '.join(k[:90] for k in kernels)}")
print()
print("exercise 1, the timing code fixed:")
print(bench.EXERCISE_1)
