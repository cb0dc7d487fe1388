"""Probe: softmax's whole-row forward kernels (one row a program, several rows a program)
storing their rows with .cs (streaming: evict first from L2, as Liger-Kernel's softmax
stores) against the plain stores of today, at the default plan's kernel, block and warps,
with Liger and a copy of the same bytes (y.copy_(x)) timed beside them, in bf16 and fp32.
Each checked against a float64 softmax, then timed by CUDA-graph replays and by do_bench (L2
flushed), three interleaved repeats (median). Prints, per shape, each variant's fraction of
the copy (copy us / its us) and Liger's time over ours.
Decides: SoftmaxTuning.row_stream (kernels/tuning.py; issue 37: softmax bf16 32768x1024 was
0.92 of the copy in graph time and 0.96x Liger on the H200, 2026-12-06).

    python benchmarks/probes/softmax_stream.py [MxN ...]
"""

from _common import dtype_name, interleaved, shapes_from_argv
from softmax_sfu import LigerSoftmaxFunction, cases, launcher
from tritonlab.kernels import softmax as sm

SHAPES = ((32768, 1024), (8192, 4096), (4096, 16384), (2048, 32768), (16384, 512))


def main(shapes=SHAPES):
    summary = []
    for M, N, dtype, x, y, check, (kind, block, warps) in cases(shapes):
        if kind not in ("row", "rows"):
            print(f"{M}x{N} {dtype_name(dtype)}: the default is {kind}, not a row kernel")
            continue
        impls = [(f"plain {kind} {block} w{warps}", launcher(sm, kind, x, y, block, warps),
                  check),
                 (f".cs {kind} {block} w{warps}",
                  launcher(sm, kind, x, y, block, warps, STREAM=True), check),
                 ("copy", lambda: y.copy_(x), None)]
        if LigerSoftmaxFunction is not None:
            impls.append(("Liger", lambda: LigerSoftmaxFunction.apply(x),
                          lambda: check(LigerSoftmaxFunction.apply(x))))
        rows = interleaved(impls)
        by = {r[0].split()[0]: (r[3], r[4]) for r in rows}  # graph, do_bench
        name = f"{M}x{N} {dtype_name(dtype)}"
        copy = by.get("copy")
        for label, _, err, g, c in sorted(rows, key=lambda r: r[4]):
            frac = (f"of copy {copy[1] / c:.3f} ({copy[0] / g:.3f})" if copy else "")
            print(f"softmax {name:<18} {label:<22} do_bench {c:8.1f} us  graph {g:8.1f} us "
                  f" {frac}  err {err}", flush=True)
        parts = [name]
        for label in ("plain", ".cs"):
            if label in by and copy:
                g, c = by[label]
                liger = (f", Liger {by['Liger'][1] / c:.3f}x ({by['Liger'][0] / g:.3f}x)"
                         if "Liger" in by else "")
                parts.append(f"{label} {copy[1] / c:.3f} ({copy[0] / g:.3f}){liger}")
        summary.append("  ".join(parts))
    print("\nsummary: of the copy in do_bench (graph); Liger's time over ours:")
    print("\n".join(summary))


if __name__ == "__main__":  # softmax_stream.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
