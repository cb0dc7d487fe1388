"""minitriton.testing: do_bench's budgets and return modes, perf_report's table, CSV and plot,
assert_close. Deterministic: the benchmark functions return fixed numbers, and the only timed
function sleeps, so that the number of calls does not depend on the machine's speed."""
import csv
import time

import ml_dtypes
import numpy as np
import pytest

from minitriton import testing


class Counter:
    def __init__(self, sleep=0.0):
        self.calls, self.sleep = 0, sleep

    def __call__(self):
        self.calls += 1
        if self.sleep:
            time.sleep(self.sleep)


@pytest.mark.parametrize("mode", ["min", "max", "mean", "median"])
def test_do_bench_returns_one_float_per_mode(mode):
    ms = testing.do_bench(Counter(), warmup=1, rep=2, return_mode=mode)
    assert isinstance(ms, float) and ms >= 0


def test_do_bench_quantiles_and_all():
    lo, med, hi = testing.do_bench(Counter(), warmup=1, rep=2, quantiles=[0.2, 0.5, 0.8])
    assert lo <= med <= hi
    assert isinstance(testing.do_bench(Counter(), rep=2, quantiles=[0.5]), float)
    times = testing.do_bench(Counter(), rep=2, return_mode="all")
    assert isinstance(times, list) and len(times) >= 1


def test_do_bench_rejects_an_unknown_return_mode():
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(Counter(), return_mode="p99")


def test_a_call_slower_than_the_budget_runs_three_times():
    # the first call, one estimate, one timed run: warm-up is already spent by then
    fn = Counter(sleep=0.02)
    testing.do_bench(fn, warmup=5, rep=10)
    assert fn.calls == 3


def test_grad_to_none_clears_gradients_before_each_timed_run():
    class Param:
        grad = "stale"

    p, seen = Param(), []
    testing.do_bench(lambda: seen.append(p.grad), warmup=0, rep=1, grad_to_none=[p])
    assert seen[-1] is None


def test_do_bench_cudagraph_is_do_bench():
    assert isinstance(testing.do_bench_cudagraph(Counter(), rep=2), float)


def _bench(**overrides):
    kwargs = dict(x_names=["size"], x_vals=[4, 8], line_arg="provider",
                  line_vals=["a", "b"], line_names=["A", "B"], ylabel="GB/s",
                  plot_name="toy", args={"scale": 10})
    kwargs.update(overrides)
    return testing.Benchmark(**kwargs)


@testing.perf_report(_bench())
def toy(size, provider, scale):
    if provider == "a":
        return float(size * scale)
    return float(size), float(size - 1), float(size + 1)  # (value, low, high)


def test_perf_report_prints_the_table(capsys):
    table = toy.run(print_data=True, return_df=True)
    out = capsys.readouterr().out
    assert out.startswith("toy:\n")
    assert out.split("\n")[1].split() == ["size", "A", "B"]
    assert table.columns == ["size", "A", "B"]
    assert table["A"] == [40.0, 80.0] and table["B"] == [4.0, 8.0]
    assert toy.run() is None


def test_perf_report_writes_csv_and_html_where_triton_does(tmp_path):
    toy.run(save_path=str(tmp_path / "out"))  # made if missing
    with open(tmp_path / "out" / "toy.csv") as f:
        assert list(csv.reader(f)) == [["size", "A", "B"], ["4", "40.0", "4.0"],
                                       ["8", "80.0", "8.0"]]
    assert 'src="toy.png"' in (tmp_path / "out" / "results.html").read_text()


def test_tuples_of_x_values_and_extra_keyword_arguments():
    seen = []

    @testing.perf_report([_bench(x_names=["M", "N"], x_vals=[(1, 2), (3, 4)], args={})])
    def grid(M, N, provider, flag):
        seen.append((M, N, provider, flag))
        return 1.0

    tables = grid.run(return_df=True, flag=True)
    assert tables[0].columns == ["M", "N", "A", "B"]
    assert seen == [(1, 2, "a", True), (1, 2, "b", True), (3, 4, "a", True), (3, 4, "b", True)]


def test_diff_col_with_two_lines():
    table = toy.run(return_df=True, diff_col=True)
    assert table["Diff"] == [4.0 - 40.0, 8.0 - 80.0]


def test_plots_into_save_path(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    toy.run(save_path=str(tmp_path))
    assert (tmp_path / "toy.png").read_bytes()[:4] == b"\x89PNG"


def test_show_plots_without_a_display_says_so(capsys):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    toy.run(show_plots=True)
    assert "no display" in capsys.readouterr().err


def test_assert_close():
    testing.assert_close(np.ones(4), np.ones(4) + 5e-3)
    testing.assert_close(np.ones(3, ml_dtypes.bfloat16), np.ones(3, np.float32))
    testing.assert_close(1.0, 1.5, atol=lambda dtype: 1.0)
    with pytest.raises(AssertionError):
        testing.assert_close(np.ones(4), np.ones(4) + 0.1)
    with pytest.raises(AssertionError, match="is not close to"):
        testing.assert_close(np.float32(1.0), np.float32(2.0), err_msg="scalar")
    testing.assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))


def test_assert_close_takes_torch_tensors():
    torch = pytest.importorskip("torch")
    testing.assert_close(torch.ones(3, dtype=torch.bfloat16), torch.ones(3))


def test_do_bench_says_once_that_it_times_the_cpu(capsys, monkeypatch):
    monkeypatch.setattr(testing, "_NOTED", [])
    testing.do_bench(Counter(), warmup=1, rep=1)
    testing.do_bench(Counter(), warmup=1, rep=1)
    err = capsys.readouterr().err
    assert err.count("not a GPU's") == 1
