"""Compare several implementations of one thing, and sweep one over sizes."""
from __future__ import annotations

import math
from dataclasses import dataclass

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from ..units import format_time
from .export import environment, write_csv, write_json
from .timing import NOISY_SPREAD, benchmark

# |exponent| below this rounds to 0.0 at one decimal: the time did not grow (fixed costs, or
# times at the clock's resolution), and "n^-0.0" would only say so badly
FLAT = 0.05


def describe_exponent(e):
    """How the time grows between two sizes: '~n^2.9', 'flat', or 'n/a' (a zero time)."""
    if e is None:
        return "n/a"
    if abs(e) < FLAT:
        return "flat"
    return f"~n^{e:.1f}"


def _noise_caption(results):
    """A table's caption when its noisiest row's p80/p20 is over NOISY_SPREAD (else None)."""
    worst = max(results, key=lambda r: r.spread, default=None)
    if worst is None or worst.spread <= NOISY_SPREAD:
        return None
    return (f"Noisy: p80/p20 {worst.spread:.3g} at {worst.label or 'one row'}. Other work on "
            "this machine is in these times; run again when it is idle.")


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
        t = Table(title=title or f"times (baseline: {self.baseline})",
                  caption=_noise_caption(self.results.values()), caption_justify="left")
        for col in ("implementation", "median", "p20", "p80", "min", "speed-up"):
            t.add_column(col, justify="left" if col == "implementation" else "right")
        ratios = self.ratios()
        for name, r in self.results.items():
            t.add_row(name, format_time(r.median), format_time(r.p20), format_time(r.p80),
                      format_time(r.min), f"{ratios[name]:.2f}x")
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
        """Growth exponent between consecutive sizes: d log(time) / d log(size); None where a
        median is zero (below the clock's resolution). -0.0 comes back as 0.0."""
        out = []
        for (n0, r0), (n1, r1) in zip(zip(self.sizes, self.results),
                                       zip(self.sizes[1:], self.results[1:])):
            if r0.median <= 0 or r1.median <= 0:
                out.append(None)
                continue
            out.append(math.log(r1.median / r0.median) / math.log(n1 / n0) + 0.0)
        return out

    def rows(self):
        exps = [None] + self.exponents()
        return [{self.label: n, **r.summary(), "exponent_from_previous": e}
                for n, r, e in zip(self.sizes, self.results, exps)]

    def table(self, title=None):
        t = Table(title=title or "size sweep", caption=_noise_caption(self.results),
                  caption_justify="left")
        for col in (self.label, "median", "p20", "p80", "growth exponent"):
            t.add_column(col, justify="right")
        for i, row in enumerate(self.rows()):
            e = row["exponent_from_previous"]
            t.add_row(str(row[self.label]), format_time(row["median_s"]),
                      format_time(row["p20_s"]), format_time(row["p80_s"]),
                      "" if i == 0 else describe_exponent(e))
        return t

    def figure(self, title="time against size"):
        """The log-log matplotlib figure of median time against size: the p20-p80 band, each
        segment labelled with its growth exponent, and an n^3 reference line (with two sizes or
        more: one point has no band, no slope and nothing to compare a line with)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
        med = [r.median * 1e3 for r in self.results]
        lo = [r.p20 * 1e3 for r in self.results]
        hi = [r.p80 * 1e3 for r in self.results]
        ax.plot(self.sizes, med, "o-", label="median time")
        ax.set_xscale("log")
        ax.set_yscale("log")
        if len(self.sizes) > 1:
            ax.fill_between(self.sizes, lo, hi, alpha=0.25, label="p20-p80")
            for (n0, n1), (t0, t1), e in zip(zip(self.sizes, self.sizes[1:]), zip(med, med[1:]),
                                             self.exponents()):
                ax.annotate(describe_exponent(e), (math.sqrt(n0 * n1), math.sqrt(t0 * t1)),
                            textcoords="offset points", xytext=(0, 8), ha="center", fontsize=9)
            ref = [med[-1] * (n / self.sizes[-1]) ** 3 for n in self.sizes]
            ax.plot(self.sizes, ref, ":", color="gray", label="n^3 (for reference)")
        elif med and med[0] > 0:
            # one point: autoscaling would zoom onto it and tick a sliver of one decade; show
            # a decade either side instead (so a power of ten is ticked), p20-p80 as an error bar
            ax.errorbar(self.sizes, med, yerr=[[med[0] - lo[0]], [hi[0] - med[0]]], fmt="none",
                        ecolor="C0", capsize=3)
            ax.set_xlim(self.sizes[0] / 10, self.sizes[0] * 10)
            ax.set_ylim(min(lo[0], med[0]) / 10, max(hi[0], med[0]) * 10)
        ax.set_xlabel(f"{self.label} (matrix size)")
        ax.set_ylabel("time per call (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        return fig

    def plot(self, path, title="time against size"):
        """Save `figure(title)` as a PNG at `path`; returns the path."""
        import matplotlib.pyplot as plt
        fig = self.figure(title)
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
