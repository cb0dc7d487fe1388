"""Markdown tables from the results ledger (docs/results/ledger.csv), for docs/performance.md.

    python benchmarks/ledger_report.py --run RUN [--op OP ...] [--view summary|full]
    python benchmarks/ledger_report.py --update docs/performance.md

Every ratio compares two rows of the same run (the alternative measured next to ours), never
rows of different runs. `summary`: one line per op, shape and dtype, for the `triton` row,
against torch eager and torch.compile, on do_bench time and on CUDA-graph time, and the
fraction of the ceiling. `full`: every implementation, with its ratio against the group's
first one.

`--update DOC` regenerates, in place, every block of DOC written as

    <!-- ledger run=RUN [op='rmsnorm fwd+bwd',softmax ...] [view=full] -->
    ...generated...
    <!-- /ledger -->

so the doc's tables are the ledger's rows, with the run's GPU, versions, date and commit.
"""
import argparse
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))

from tritonlab.bench.export import read_ledger  # noqa: E402

# The ceilings "of ceiling" divides by, measured on the H200 (2026-11-29): copy bandwidth
# (torch copy_ of 1 GiB: 4.2-4.4 TB/s; ledger run roofline-h200-2026-11-29 and docs/hardware.md)
# and cuBLAS bf16 matmul (4096^3).
CEILING = {"GB/s": 4300.0, "TFLOP/s": 732.0}
BASELINES = ("torch eager", "torch.compile")
LIGER = ("Liger",)  # a baseline where the run measured it (benchmarks/kernels.py, docs/gpu.md)
# the copy (or read) of the op's own byte count, timed as the op is: the ceiling at that size
SAME_BYTES = ("same bytes: copy", "same bytes: read")
BLOCK = re.compile(r"^(<!-- ledger (?P<args>[^\n]*?) -->\n)(?P<body>.*?)^(<!-- /ledger -->)$",
                   re.S | re.M)  # markers on lines of their own


def _us(ms):
    return "-" if ms is None else f"{ms * 1e3:.1f}"


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def _frac(ceiling, ours, key):
    """ceiling's time over ours at `key`: the fraction of the ceiling's rate we reach."""
    a, b = ceiling.get(key), ours.get(key)
    return "-" if a is None or b is None else f"{a / b:.2f}"


def _groups(rows):
    """Rows grouped by (run, op, shape, dtype), in ledger order."""
    groups = {}
    for r in rows:
        groups.setdefault((r["run"], r["op"], r["shape"], r["dtype"]), {})[
            r["implementation"]] = r
    return groups


def provenance(rows):
    """One line naming where, with what and when the rows were measured."""
    seen = {(r["run"], r["gpu"], r["torch"], r["triton"], r["date"], r["commit"]) for r in rows}
    return "; ".join(f"ledger run={run}: {gpu}, torch {torch}, triton {triton}, {date}, "
                     f"commit {commit}" for run, gpu, torch, triton, date, commit in sorted(seen))


def summary(rows, impl="triton"):
    """Our implementation against the baselines of the same run, one line per group; Liger's
    columns where the run has Liger rows."""
    groups = _groups(rows)
    baselines = BASELINES + (LIGER if any(LIGER[0] in g for g in groups.values()) else ())
    short = {"torch eager": "eager", "torch.compile": "compile", "Liger": "Liger"}
    head = ([f"vs {b}" for b in baselines] + [f"vs {short[b]}, graph" for b in baselines])
    same = any(k in g for g in groups.values() for k in SAME_BYTES)
    if same:  # our time as a fraction of the same-size copy's: do_bench (graph)
        head.append("of same-bytes copy (graph)")
    lines = ["| op | shape | dtype | triton us (graph) | rate | of ceiling | " + " | ".join(head)
             + " |", "|---|---|---|---|---|---|" + "---|" * len(head)]
    for (_, op, shape, dtype), impls in groups.items():
        ours = impls.get(impl)
        if ours is None:
            continue
        base = [impls.get(b) or {} for b in baselines]
        ratios = ([_ratio(b.get("median_ms"), ours["median_ms"]) for b in base]
                  + [_ratio(b.get("graph_ms"), ours["graph_ms"]) for b in base])
        if same:
            c = next((impls[k] for k in SAME_BYTES if k in impls), None)
            ratios.append("-" if c is None else f"{_frac(c, ours, 'median_ms')} "
                          f"({_frac(c, ours, 'graph_ms')})")
        lines.append(f"| {op} | {shape} | {dtype} | {_us(ours['median_ms'])} "
                     f"({_us(ours['graph_ms'])}) | {ours['rate']:.0f} {ours['unit']} | "
                     f"{ours['rate'] / CEILING[ours['unit']]:.2f} | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def full(rows):
    """Every row; the ratio is the group's first implementation's median over this one's."""
    lines = ["| op | shape | dtype | implementation | median us (p20-p80) | graph us | rate | "
             "vs first |", "|---|---|---|---|---|---|---|---|"]
    for (_, op, shape, dtype), impls in _groups(rows).items():
        first = next(iter(impls.values()))
        for name, r in impls.items():
            spread = (f" ({_us(r['p20_ms'])}-{_us(r['p80_ms'])})" if r["p20_ms"] is not None
                      else "")
            rate = f"{r['rate']:.0f} {r['unit']}" if r["rate"] is not None else "-"
            lines.append(f"| {op} | {shape} | {dtype} | {name} | {_us(r['median_ms'])}{spread} | "
                         f"{_us(r['graph_ms'])} | {rate} | "
                         f"{_ratio(first['median_ms'], r['median_ms'])} |")
    return "\n".join(lines)


VIEWS = {"summary": summary, "full": full}


def render(ledger, view="summary", **filters):
    rows = read_ledger(ledger, **filters)
    if not rows:
        raise SystemExit(f"ledger_report: no rows in {ledger} match {filters}")
    return f"{provenance(rows)}\n\n{VIEWS[view](rows)}\n"


def update(doc, ledger):
    """Regenerate every ledger block of `doc` in place; returns how many there were."""
    text = Path(doc).read_text()
    count = 0

    def block(m):
        nonlocal count
        count += 1
        args = dict(a.split("=", 1) for a in shlex.split(m.group("args")))
        view = args.pop("view", "summary")
        args = {k: tuple(v.split(",")) for k, v in args.items()}  # op=add,gelu: either
        return m.group(1) + render(ledger, view, **args) + m.group(4)

    Path(doc).write_text(BLOCK.sub(block, text))
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", type=Path, default=ROOT / "docs" / "results" / "ledger.csv")
    parser.add_argument("--run", help="the run to report (see the ledger's run column)")
    parser.add_argument("--op", action="append", help="only these ops (repeatable)")
    parser.add_argument("--view", choices=sorted(VIEWS), default="summary")
    parser.add_argument("--update", type=Path, metavar="DOC",
                        help="regenerate the ledger blocks of DOC in place")
    args = parser.parse_args()
    if args.update:
        print(f"{args.update}: {update(args.update, args.ledger)} ledger blocks regenerated")
        return
    if not args.run:
        parser.error("--run or --update is required")
    filters = {"run": args.run, **({"op": tuple(args.op)} if args.op else {})}
    print(render(args.ledger, args.view, **filters), end="")


if __name__ == "__main__":
    main()
