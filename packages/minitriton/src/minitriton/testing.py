"""`minitriton.testing`: `triton.testing`'s benchmark helpers, timed on the CPU.

    ms = do_bench(lambda: add(x, y))                       # mean of the repetitions, in ms
    ms, lo, hi = do_bench(fn, quantiles=[0.5, 0.2, 0.8])

    @perf_report(Benchmark(x_names=["size"], x_vals=[2**i for i in range(12, 20)],
                           line_arg="provider", line_vals=["triton", "torch"],
                           line_names=["Triton", "Torch"], ylabel="GB/s",
                           plot_name="vector-add-performance", args={}))
    def benchmark(size, provider): ...
    benchmark.run(print_data=True, save_path="out/")     # prints the table; CSV + PNG there

Signatures and return values are Triton's. The numbers are not a GPU's: they are the host's
wall time of whatever `fn` does (under minitriton, the simulator's time), so they compare
providers on this machine and say nothing about the kernel's speed on a GPU. matplotlib is
needed only to plot (`show_plots`, `save_path`); the table and the CSV need nothing.
"""
from __future__ import annotations

import contextlib
import csv
import os
import statistics
import sys
import time

import numpy as np

from .runtime.launch import sampling, scaling

RETURN_MODES = ("min", "max", "mean", "median", "all")
_SMALL = {"points": None, "programs": 0}  # set by small(): benchmarks in a hurry
_CPU_NOTE = ("minitriton.testing: timings are this CPU's wall time of the simulator, not a "
             "GPU's; compare providers on this machine only (a simulated kernel is slower than "
             "torch's CPU code: what it measures is not the GPU's ranking)")
_NOTED = []  # whether the note was printed in this process


@contextlib.contextmanager
def small(points=2, programs=16):
    """Benchmarks in a hurry (the runner's `--small`), for the duration:

    - every `Benchmark` of `perf_report` measures only its `points` smallest x values (by the
      product of their numbers);
    - inside a benchmark point, every launch runs `programs` of its grid's programs, evenly
      spread over the launch order (the autotuner's sampled trials; 0: all of them). The
      values such a point computes are not the kernel's (the other programs did not run):
      a point that fails that way (a check of values in the benchmark function, programs
      waiting on others) runs again in full;
    - `do_bench` runs `fn` once and returns that call's time (its first, which compiles),
      each sampled launch's time scaled by its grid's programs over those that ran, whatever
      `warmup` and `rep`.

    Kernels and checks outside benchmark points, and problem sizes, are untouched."""
    saved = dict(_SMALL)
    _SMALL.update(points=int(points), programs=int(programs))
    try:
        yield
    finally:
        _SMALL.update(saved)


def _magnitude(x):
    values = x if isinstance(x, (list, tuple)) else [x]
    product = 1.0
    for v in values:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            product *= abs(v)
    return product


def _call_ms(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        # linear interpolation, as torch.quantile
        ret = [float(q) for q in np.quantile(np.asarray(times), list(quantiles))]
        return ret[0] if len(ret) == 1 else ret
    if return_mode == "all":
        return times
    return float({"min": min, "max": max, "mean": statistics.mean,
                  "median": statistics.median}[return_mode](times))


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Time `fn` as `triton.testing.do_bench` does, in milliseconds of CPU wall time.

    `warmup` and `rep` are budgets in ms, as in Triton: the runtime is estimated first, then
    `fn` runs about `warmup` ms untimed and about `rep` ms timed (at least once). Returns the
    `quantiles` of the timed runs when given (one float for one quantile), else their `min`,
    `max`, `mean`, `median`, or `all` of them (a list), per `return_mode`.

    Unlike on the GPU there is no L2 to flush and nothing to synchronise; and the first call
    and the estimate's calls count as warm-up, so that a call that takes seconds in the
    simulator runs three times, not eight.
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(RETURN_MODES)}, "
                         f"got {return_mode!r}")
    if not _NOTED:  # once a process: the numbers a program prints next are the CPU's
        _NOTED.append(True)
        print(_CPU_NOTE, file=sys.stderr)
    if _SMALL["points"] is not None:  # in a hurry: one call, timed, compilation and all
        for x in grad_to_none or ():
            x.grad = None
        with scaling() as extra:  # sampled launches count as their whole grids
            ms = _call_ms(fn)
        return _summarize([ms + extra[0] * 1e3], quantiles, return_mode)
    first = _call_ms(fn)  # compiles, as on the GPU: not part of the estimate
    n_estimate = max(1, min(5, int(rep / max(first, 1e-6))))
    estimate = max(sum(_call_ms(fn) for _ in range(n_estimate)) / n_estimate, 1e-6)
    for _ in range(max(0, int(warmup / estimate) - n_estimate - 1)):
        fn()
    times = []
    for _ in range(max(1, int(rep / estimate))):
        for x in grad_to_none or ():
            x.grad = None  # so that a backward pass in fn does not accumulate
        times.append(_call_ms(fn))
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """`triton.testing.do_bench_cudagraph`: there are no CUDA graphs on a CPU, so this is
    `do_bench` with no warm-up beyond the estimate."""
    return do_bench(fn, warmup=0, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                    return_mode=return_mode)


def _as_array(x):
    if hasattr(x, "detach"):  # a torch tensor, without importing torch
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    x = np.asarray(x)
    if x.dtype.kind == "V" or x.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        x = x.astype(np.float32)  # ml_dtypes' small floats: NumPy's testing cannot compare them
    return x


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """As `triton.testing.assert_close`: atol 1e-2 and rtol 0 unless given (either may be a
    function of x's dtype); NaNs compare equal. Accepts torch tensors, NumPy arrays, scalars."""
    dtype = getattr(x, "dtype", None)
    atol = 1e-2 if atol is None else atol
    atol = atol(dtype) if callable(atol) else atol
    rtol = 0.0 if rtol is None else rtol
    rtol = rtol(dtype) if callable(rtol) else rtol
    x, y = _as_array(x), _as_array(y)
    if x.size > 1 or y.size > 1:
        np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {x} is not close to {y} (atol={atol}, rtol={rtol})")


class Benchmark:
    """One plot of `perf_report`: `fn(**{x_name: x for x_name in x_names}, line_arg=line_val,
    **args)` for every x of `x_vals` (a scalar shared by all `x_names`, or a tuple of one value
    per name) and every value of `line_vals`. `fn` returns one number, or (value, low, high)."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args,
                 xlabel="", ylabel="", x_log=False, y_log=False, color=None, styles=None):
        self.x_names = list(x_names)
        self.x_vals = x_vals
        self.line_arg = line_arg
        self.line_vals = line_vals
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = args
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.x_log = x_log
        self.y_log = y_log
        self.color = color
        self.styles = styles


class Table:
    """The results of one Benchmark: `columns` (the x names, then the line names) and `rows`.
    What Triton returns as a pandas DataFrame (`run(return_df=True)`); `table[name]` is a
    column, `str(table)` the printed table."""

    def __init__(self, columns, rows):
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]

    def __getitem__(self, name):
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def __len__(self):
        return len(self.rows)

    def __str__(self):
        cells = [[""] + self.columns] + [[str(i)] + [_fmt(v) for v in r]
                                         for i, r in enumerate(self.rows)]
        widths = [max(len(row[j]) for row in cells) for j in range(len(cells[0]))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)

    __repr__ = __str__

    def to_csv(self, path, float_format="%.1f"):
        with open(path, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(self.columns)
            for r in self.rows:
                out.writerow([float_format % v if isinstance(v, float) else v for v in r])


def _fmt(v):
    if v is None:
        return "NaN"
    if isinstance(v, (float, np.floating)):
        return f"{v:.6f}" if abs(v) < 1e9 else f"{v:.6g}"
    return str(v)


def _can_show(fig, plt):
    """Whether plt.show() can show anything: an interactive backend, or a notebook's."""
    return (fig.canvas.required_interactive_framework is not None
            or plt.get_backend().startswith("module://"))


class Mark:
    """What `@perf_report(...)` makes of the benchmark function: call `.run(...)`."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _point(self, **kwargs):
        """One point of a benchmark: under `small`, with sampled launches first, in full if
        the sample fails."""
        if not _SMALL["points"] or not _SMALL["programs"]:
            return self.fn(**kwargs)
        try:
            with sampling(_SMALL["programs"]):
                return self.fn(**kwargs)
        except Exception:  # a check of the values, or programs that wait on ones not run
            return self.fn(**kwargs)

    def _measure(self, bench, kwargs):
        """Rows of x values + (value, low, high) per line."""
        rows = []
        x_vals = list(bench.x_vals)
        if _SMALL["points"] is not None:
            keep = sorted(range(len(x_vals)), key=lambda i: _magnitude(x_vals[i]))
            x_vals = [x_vals[i] for i in sorted(keep[:_SMALL["points"]])]
        for x in x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"expected {len(bench.x_names)} values for {bench.x_names}, "
                                 f"got {x}")
            lines = []
            for y in bench.line_vals:
                ret = self._point(**dict(zip(bench.x_names, xs)), **{bench.line_arg: y},
                                  **bench.args, **kwargs)
                lines.append(tuple(ret) if isinstance(ret, (list, tuple)) else (ret, None, None))
            rows.append((xs, lines))
        return rows

    def _plot(self, bench, rows, show_plots, save_path):
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            print(f"minitriton.testing: matplotlib is not installed, so `{bench.plot_name}` is "
                  "not plotted (pip install matplotlib)", file=sys.stderr)
            return
        fig, ax = plt.subplots()
        xs = [r[0][0] for r in rows]  # the first x name is the x axis
        for i, name in enumerate(bench.line_names):
            color, style = bench.styles[i][:2] if bench.styles else (None, None)
            ax.plot(xs, [r[1][i][0] for r in rows], label=name, color=color, ls=style)
            lo, hi = [r[1][i][1] for r in rows], [r[1][i][2] for r in rows]
            if None not in lo and None not in hi:
                ax.fill_between(xs, lo, hi, alpha=0.15, color=color)
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        ax.set_xscale("log" if bench.x_log else "linear")
        ax.set_yscale("log" if bench.y_log else "linear")
        if show_plots and _can_show(fig, plt):
            plt.show()
        elif show_plots:  # Agg & co: plt.show() would only warn
            print(f"minitriton.testing: no display to show `{bench.plot_name}` on; pass "
                  "save_path= to keep it as a PNG", file=sys.stderr)
        if save_path:
            fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        plt.close(fig)

    def _run(self, bench, save_path, show_plots, print_data, diff_col=False, **kwargs):
        rows = self._measure(bench, kwargs)
        if bench.plot_name and (show_plots or save_path):
            self._plot(bench, rows, show_plots, save_path)
        columns = bench.x_names + bench.line_names
        values = [xs + [line[0] for line in lines] for xs, lines in rows]
        if diff_col and len(bench.line_names) == 2:
            columns.append("Diff")
            values = [v + [v[-1] - v[-2]] for v in values]
        table = Table(columns, values)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table)
        if save_path:
            table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"))
        return table

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        """Measure every Benchmark; print the tables (`print_data`), show the plots
        (`show_plots`), and write `<plot_name>.csv`, `<plot_name>.png` and `results.html` into
        the directory `save_path`, as Triton does. Other keyword arguments go to the function.
        With `return_df`, returns the Table (a list of them for a list of Benchmarks)."""
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else list(self.benchmarks)
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        tables = [self._run(b, save_path, show_plots, print_data, **kwargs) for b in benchmarks]
        if save_path:
            with open(os.path.join(save_path, "results.html"), "w") as html:
                html.write("<html><body>\n")
                html.writelines(f'<image src="{b.plot_name}.png"/>\n' for b in benchmarks)
                html.write("</body></html>\n")
        if return_df:
            return tables[0] if single else tables
        return None


def perf_report(benchmarks):
    """Decorator: `fn` becomes a Mark whose `.run(...)` measures it over `benchmarks` (one
    Benchmark or a list)."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["do_bench", "do_bench_cudagraph", "assert_close", "Benchmark", "Mark", "perf_report",
           "Table", "small"]
