"""Compare several implementations of one thing, and sweep one over sizes."""
from __future__ import annotations

import math
from dataclasses import dataclass

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .export import environment, write_csv, write_json
from .timing import benchmark


def _ms(seconds):
    return f"{seconds * 1e3:.3f}"


@dataclass
class Comparison:
    results: dict  # name -> BenchResult
    baseline: str

    def ratios(self):
        base = self.results[self.baseline].median
        return {name: base / r.median for name, r in self.results.items()}

    def rows(self):
        ratios = self.ratios()
        return [{"name": n, **r.summary(), "speedup_vs_baseline": ratios[n]}
                for n, r in self.results.items()]

    def table(self, title=None):
        t = Table(title=title or f"times (baseline: {self.baseline})")
        for col in ("implementation", "median ms", "p20 ms", "p80 ms", "min ms", "speed-up"):
            t.add_column(col, justify="left" if col == "implementation" else "right")
        ratios = self.ratios()
        for name, r in self.results.items():
            t.add_row(name, _ms(r.median), _ms(r.p20), _ms(r.p80), _ms(r.min),
                      f"{ratios[name]:.2f}x")
        return t

    def print(self, console=None):
        (console or Console()).print(self.table())

    def export(self, csv_path=None, json_path=None):
        meta = environment(next(iter(self.results.values())).device)
        if csv_path:
            write_csv(csv_path, self.rows(), meta)
        if json_path:
            write_json(json_path, self.rows(), meta)


def compare(fns, baseline=None, **bench_kwargs):
    """Benchmark each `{name: fn}`; ratios are the baseline's median over each one's."""
    if not fns:
        raise ValueError("compare: nothing to compare")
    baseline = baseline or next(iter(fns))
    if baseline not in fns:
        raise ValueError(f"compare: baseline {baseline!r} is not one of {list(fns)}")
    results = {name: benchmark(fn, label=name, **bench_kwargs) for name, fn in fns.items()}
    return Comparison(results, baseline)


@dataclass
class Sweep:
    sizes: list
    results: list  # BenchResult per size
    label: str = "n"

    def exponents(self):
        """Growth exponent between consecutive sizes: d log(time) / d log(size)."""
        out = []
        for (n0, r0), (n1, r1) in zip(zip(self.sizes, self.results),
                                       zip(self.sizes[1:], self.results[1:])):
            out.append(math.log(r1.median / r0.median) / math.log(n1 / n0))
        return out

    def rows(self):
        exps = [None] + self.exponents()
        return [{self.label: n, **r.summary(), "exponent_from_previous": e}
                for n, r, e in zip(self.sizes, self.results, exps)]

    def table(self, title=None):
        t = Table(title=title or "size sweep")
        for col in (self.label, "median ms", "p20 ms", "p80 ms", "growth exponent"):
            t.add_column(col, justify="right")
        for row in self.rows():
            e = row["exponent_from_previous"]
            t.add_row(str(row[self.label]), _ms(row["median_s"]), _ms(row["p20_s"]),
                      _ms(row["p80_s"]), "" if e is None else f"{e:.2f}")
        return t

    def plot(self, path, title="time against size"):
        """A log-log PNG of median time against size, each segment labelled with its
        fitted exponent."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
        med = [r.median * 1e3 for r in self.results]
        lo = [r.p20 * 1e3 for r in self.results]
        hi = [r.p80 * 1e3 for r in self.results]
        ax.plot(self.sizes, med, "o-", label="median time")
        ax.fill_between(self.sizes, lo, hi, alpha=0.25, label="p20-p80")
        for (n0, n1), (t0, t1), e in zip(zip(self.sizes, self.sizes[1:]), zip(med, med[1:]),
                                         self.exponents()):
            ax.annotate(f"~n^{e:.1f}", (math.sqrt(n0 * n1), math.sqrt(t0 * t1)),
                        textcoords="offset points", xytext=(0, 8), ha="center", fontsize=9)
        ref = [med[-1] * (n / self.sizes[-1]) ** 3 for n in self.sizes]
        ax.plot(self.sizes, ref, ":", color="gray", label="n^3 (for reference)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"{self.label} (matrix size)")
        ax.set_ylabel("time per call (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path

    def export(self, csv_path=None, json_path=None):
        meta = environment(self.results[0].device if self.results else None)
        if csv_path:
            write_csv(csv_path, self.rows(), meta)
        if json_path:
            write_json(json_path, self.rows(), meta)


def sweep(make_fn, sizes, label="n", progress=True, **bench_kwargs):
    """Benchmark `make_fn(size)()` for each size (make_fn builds the inputs outside timing)."""
    results = []
    with Progress(transient=True, disable=not progress) as bar:
        task = bar.add_task("benchmarking", total=len(sizes))
        for n in sizes:
            results.append(benchmark(make_fn(n), label=f"{label}={n}", **bench_kwargs))
            bar.advance(task)
    return Sweep(list(sizes), results, label)
