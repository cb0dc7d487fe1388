"""Lecture 6 §10: what torch.compile does and does not do. Fusion on a transformer block, graph
breaks, exercise 7's Python loop, recompilation, and attention, where the compiler cannot invent
FlashAttention. Runs on CUDA (Inductor writes Triton) or the CPU (Inductor writes C++).
"""
import math

import torch
import torch.nn.functional as F
from rich.console import Console

from tritonlab.cli.lecture import lecture_options, output_dir

lecture_options(__file__, __doc__)  # first: a bad TRITONLAB_BACKEND is one line

from tritonlab import bench  # noqa: E402
from tritonlab import compilation as C  # noqa: E402
from tritonlab.units import format_time  # noqa: E402


console = Console(width=110)
device = "cuda" if torch.cuda.is_available() else "cpu"
out_dir = output_dir()
trials = 20 if device == "cuda" else 3
print(f"device: {device}, torch {torch.__version__}")
print(f"files: {out_dir.resolve()} (choose with --out DIR or TRITONLAB_OUT)\n")


class Block(torch.nn.Module):
    """RMSNorm + feed-forward (GeLU) + residual, d = 1024."""

    def __init__(self, d=1024):
        super().__init__()
        self.g = torch.nn.Parameter(torch.ones(d))
        self.w1 = torch.nn.Linear(d, 4 * d)
        self.w2 = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.g
        return x + self.w2(F.gelu(self.w1(h), approximate="tanh"))


block = Block().to(device)
x = torch.randn(8 if device == "cuda" else 2, 512 if device == "cuda" else 128, 1024, device=device)
with torch.no_grad():
    s = C.speedup(block, x, trials=trials, device=device)
    _, sources = C.generated_code(block, x)
code_path = out_dir / "lecture06_block_generated.py"
code_path.write_text("\n\n".join(sources))
print(f"RMSNorm + FFN + residual, x {tuple(x.shape)}: {s}")
print(f"  Inductor generated {C.describe_kernels(C.count_kernels(sources))} (matmuls stay with "
      f"the BLAS library); source saved to {code_path}\n")


def with_item(x):
    y = x * 2
    if y.sum().item() > 0:  # a Python decision on a tensor's value: the graph must break
        y = y + 1
    return y * 3


def with_where(x):
    y = x * 2
    return torch.where(y.sum() > 0, y + 1, y) * 3


v = torch.randn(1000, device=device)
rows = [("if y.sum().item() > 0:", C.explain(with_item, v)),
        ("torch.where(y.sum() > 0, ...)", C.explain(with_where, v))]
console.print("graph breaks (Dynamo's own log of them: TORCH_LOGS=graph_breaks):")
for label, r in rows:
    console.print(f"  {label:<32} graphs {r.graphs}, breaks {r.graph_breaks}"
                  + (f"  ({r.break_reasons[0]})" if r.break_reasons else ""))
try:
    torch._dynamo.reset()
    torch.compile(with_item, fullgraph=True, backend="eager")(v)
except Exception as e:  # noqa: BLE001 - torch raises its own Unsupported error
    print(f"  fullgraph=True on the first: {type(e).__name__}: {str(e).splitlines()[0]}")
print()


def loop_rows(x):
    out = []
    for i in range(x.shape[0]):  # a Python loop: Dynamo unrolls it
        out.append(x[i] * 2 + 1)
    return torch.stack(out)


def vectorised(x):
    return x * 2 + 1


m = torch.randn(32, 256, device=device)
for name, fn in (("loop over x.shape[0]", loop_rows), ("vectorised", vectorised)):
    r = C.explain(fn, m)
    t = bench.benchmark(lambda: fn(m), trials=trials, device=device).median
    print(f"exercise 7, {name:<21}: {r.graphs} graph, {sum(r.ops_per_graph)} operations in it, "
          f"eager {format_time(t)}")
print("  the loop is unrolled into one graph with 3 operations per row: it compiles, but the "
      "graph grows with the data\n")


def total(x):
    return (x * 2).sum()


lengths = [100, 117, 130, 155, 201]
plain = C.count_compiles(total, [torch.randn(n, device=device) for n in lengths])
padded = C.count_compiles(total, [F.pad(torch.randn(n, device=device), (0, 256 - n))
                                  for n in lengths])
marked = C.count_compiles(total, [torch.randn(n, device=device) for n in lengths],
                          mark_dynamic=(0, 0))
print(f"recompilation over lengths {lengths} (Dynamo's own log: TORCH_LOGS=recompiles):")
print(f"  as they come        : {plain.compiles} compilations (calls {plain.triggered_by}); "
      f"recompiled because: {plain.reasons[0] if plain.reasons else '-'}")
print(f"  padded to 256       : {padded.compiles} compilation")
print(f"  mark_dynamic(x, 0)  : {marked.compiles} compilation\n")


def naive_attention(q, k, v):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(s, -1) @ v


shape = (4, 16, 2048, 64) if device == "cuda" else (1, 4, 512, 64)
q, k, v = (torch.randn(*shape, device=device) for _ in range(3))
compiled_naive = torch.compile(naive_attention)
compiled_naive(q, k, v)
times = {"naive eager": lambda: naive_attention(q, k, v),
         "naive torch.compile": lambda: compiled_naive(q, k, v),
         "F.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(q, k, v)}
cmp = bench.compare(times, trials=trials, device=device)
console.print(cmp.table(title=f"attention {shape} fp32 (baseline: naive eager)"))
print("torch.compile fuses element-wise work around the matmuls but still writes the S x S score "
      "matrix; FlashAttention (SDPA) is a different algorithm (online softmax over tiles), which "
      "no fusion pass invents.")
