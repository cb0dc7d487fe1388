"""The benchmarking harness's semantics (no timing thresholds) and the profiler's op counts."""
import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, strategies as st

from tritonlab import bench
from tritonlab.bench.workloads import manual_gelu
from tritonlab.cli import main
from tritonlab.profile import count_ops, profile


class FakeDevice:
    """An asynchronous device whose clock only advances when work completes (at a sync)."""

    def __init__(self):
        self.log = []
        self.now = 0.0
        self.pending = 0.0

    def launch(self, cost):
        self.log.append("launch")
        self.pending += cost

    def synchronize(self):
        self.log.append("sync")
        self.now += self.pending
        self.pending = 0.0

    def clock(self):
        self.log.append("clock")
        return self.now


def test_sync_is_issued_before_every_clock_read():
    dev = FakeDevice()
    result = bench.benchmark(lambda: dev.launch(2.0), warmup=2, trials=4, device="cpu",
                             synchronize=dev.synchronize, clock=dev.clock)
    assert result.samples == [2.0] * 4  # without the syncs every sample would be 0
    reads = [i for i, e in enumerate(dev.log) if e == "clock"]
    assert len(reads) == 8 and all(dev.log[i - 1] == "sync" for i in reads)
    assert dev.log[:3] == ["launch", "launch", "sync"]  # warm-up, then drain, then time


def test_warmup_calls_are_not_timed():
    calls = []
    ticks = iter(range(1000))

    def fn():
        calls.append(len(calls))

    def clock():
        # each timed call lasts 1 tick, except that the first call ever would last 100
        return next(ticks) * (100 if len(calls) == 1 else 1)

    result = bench.benchmark(fn, warmup=1, trials=5, device="cpu", clock=clock)
    assert len(calls) == 6 and result.warmup == 1 and len(result.samples) == 5
    assert max(result.samples) < 100


@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=50),
       st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]))
def test_quantiles_match_numpy(samples, q):
    assert bench.quantile(samples, q) == pytest.approx(np.quantile(samples, q), abs=1e-9)


def test_result_statistics():
    r = bench.BenchResult([5.0, 1.0, 3.0, 2.0, 4.0], "cpu", 0)
    assert (r.median, r.mean, r.min, r.max) == (3.0, 3.0, 1.0, 5.0)
    assert r.p20 == pytest.approx(1.8) and r.p80 == pytest.approx(4.2)


def test_compare_and_sweep_export_round_trip(tmp_path):
    x = torch.randn(64, 64)
    cmp = bench.compare({"manual": lambda: manual_gelu(x),
                         "builtin": lambda: F.gelu(x, approximate="tanh")}, trials=3, warmup=1)
    assert cmp.ratios()["manual"] == 1.0 and set(cmp.ratios()) == {"manual", "builtin"}
    cmp.export(tmp_path / "c.csv", tmp_path / "c.json")
    rows, meta = bench.read_csv(tmp_path / "c.csv")
    assert [r["name"] for r in rows] == ["manual", "builtin"]
    assert rows[1]["median_s"] == pytest.approx(cmp.results["builtin"].median)
    assert meta["torch"] == torch.__version__ and "date" in meta
    rows, meta = bench.read_json(tmp_path / "c.json")
    assert rows[0]["trials"] == 3

    sw = bench.sweep(lambda n: (lambda a=torch.randn(n, n): a @ a), [8, 16, 32], trials=2,
                     warmup=1, progress=False)
    assert len(sw.exponents()) == 2
    sw.export(tmp_path / "s.csv")
    rows, _ = bench.read_csv(tmp_path / "s.csv")
    assert [r["n"] for r in rows] == [8, 16, 32]
    png = sw.plot(tmp_path / "s.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


LEDGER_META = {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "triton": "3.6.0",
               "date": "2026-11-29", "commit": "abc1234"}


def ledger_rows(impls, median=0.5):
    return [{"op": "softmax", "shape": "8192x4096", "dtype": "float32", "implementation": name,
             "median_ms": median, "p20_ms": median * 0.9, "p80_ms": median * 1.1,
             "rate": 2 * 8192 * 4096 * 4 / (median * 1e6), "unit": "GB/s"} for name in impls]


def test_ledger_round_trip(tmp_path):
    path = tmp_path / "results" / "ledger.csv"
    assert bench.append_ledger(path, ledger_rows(["triton"]), {**LEDGER_META, "run": "r1"}) == 1
    assert path.read_text().splitlines()[0] == ",".join(bench.LEDGER_COLUMNS)
    (row,) = bench.read_ledger(path)
    assert row["median_ms"] == 0.5 and row["p80_ms"] == pytest.approx(0.55)
    assert row["graph_ms"] is None and row["note"] == ""  # not given: empty, read back as None
    assert (row["run"], row["gpu"], row["commit"], row["implementation"]) == (
        "r1", "NVIDIA H200", "abc1234", "triton")


def test_ledger_appends_keep_every_run(tmp_path):
    path = tmp_path / "ledger.csv"
    bench.append_ledger(path, ledger_rows(["torch eager", "triton"]), {**LEDGER_META, "run": "a"})
    bench.append_ledger(path, ledger_rows(["triton"], 0.4), {**LEDGER_META, "run": "b"})
    assert [(r["run"], r["median_ms"]) for r in bench.read_ledger(path)] == [
        ("a", 0.5), ("a", 0.5), ("b", 0.4)]
    assert path.read_text().count("run,op,") == 1  # one header


def test_ledger_defaults_from_the_checkout(tmp_path):
    path = tmp_path / "ledger.csv"
    bench.append_ledger(path, ledger_rows(["triton"]), {"gpu": "NVIDIA H200"})
    (row,) = bench.read_ledger(path)
    assert row["commit"] == bench.git_commit() and row["commit"]
    assert row["run"].endswith("Z") and len(row["date"]) == 10
    assert bench.git_commit(tmp_path) == "unknown"  # tmp_path is no checkout


def test_ledger_refuses_another_header_and_unknown_columns(tmp_path):
    path = tmp_path / "ledger.csv"
    path.write_text("op,shape,median_us\nadd,2^28,740\n")
    with pytest.raises(ValueError, match="not the ledger's"):
        bench.append_ledger(path, ledger_rows(["triton"]), LEDGER_META)
    with pytest.raises(ValueError, match="not the ledger's"):
        bench.read_ledger(path)
    assert path.read_text() == "op,shape,median_us\nadd,2^28,740\n"  # left as it was
    with pytest.raises(ValueError, match="unknown columns"):
        bench.append_ledger(tmp_path / "new.csv", [{"op": "add", "median_us": 1.0}], LEDGER_META)


def test_ledger_filters(tmp_path):
    path = tmp_path / "ledger.csv"
    bench.append_ledger(path, ledger_rows(["torch eager", "torch.compile", "triton"]),
                        {**LEDGER_META, "run": "a"})
    bench.append_ledger(path, [{**r, "dtype": "bfloat16"} for r in ledger_rows(["triton"])],
                        {**LEDGER_META, "run": "b"})
    assert len(bench.read_ledger(path, op="softmax")) == 4
    assert [r["run"] for r in bench.read_ledger(path, implementation="triton")] == ["a", "b"]
    assert len(bench.read_ledger(path, run="a", implementation=("triton", "torch eager"))) == 2
    assert bench.read_ledger(path, dtype="float16") == []
    with pytest.raises(ValueError, match="no column"):
        bench.read_ledger(path, kernel="softmax")


def test_exponent_of_a_known_power_law():
    sw = bench.Sweep([10, 20, 40], [bench.BenchResult([n ** 3 * 1e-9], "cpu", 0)
                                    for n in (10, 20, 40)])
    assert sw.exponents() == pytest.approx([3.0, 3.0])


def test_pitfalls_run_on_the_cpu_and_explain():
    a = torch.randn(32, 32)
    p = bench.no_sync(lambda: a @ a, device="cpu", repeats=3)
    assert "synchronously" in p.explanation and p.ratio > 0
    assert "warm up" in str(bench.first_run(lambda: (lambda: a @ a), device="cpu"))
    assert bench.item_in_loop(lambda: (a @ a).sum(), steps=3, device="cpu").right_s > 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="baseline"):
        bench.compare({"a": lambda: None}, baseline="b")
    with pytest.raises(ValueError, match="synchronise"):
        bench.synchronizer("meta")


def test_gelu_operator_counts():
    x = torch.randn(128, 128)
    assert count_ops(lambda: manual_gelu(x)) == {"aten::mul": 6, "aten::add": 2, "aten::tanh": 1}
    assert count_ops(lambda: F.gelu(x, approximate="tanh")) == {"aten::gelu": 1}


def test_profile_report(tmp_path):
    x = torch.randn(128, 128)
    report = profile(lambda: manual_gelu(x))
    names = {r.name: r for r in report.ops()}
    assert names["aten::mul"].calls == 6 and names["aten::tanh"].calls == 1
    assert report.sorted("calls")[0].calls >= report.sorted("calls")[-1].calls
    report.to_csv(tmp_path / "p.csv")
    assert "aten::mul" in (tmp_path / "p.csv").read_text()
    trace = json.loads(report.export_chrome_trace(tmp_path / "t.json").read_text())
    assert any(e.get("name") == "aten::tanh" for e in trace["traceEvents"])
    with pytest.raises(ValueError, match="sort by"):
        report.sorted("bogus")


def test_cli_bench_and_profile(tmp_path, capsys):
    assert main(["bench", "matmul", "--sizes", "8", "16", "--trials", "2", "--warmup", "1",
                 "--json", str(tmp_path / "b.json")]) == 0
    assert "growth exponent" in capsys.readouterr().out
    assert bench.read_json(tmp_path / "b.json")[0][1]["n"] == 16
    assert main(["profile", "gelu-manual", "--size", "32"]) == 0
    assert "operators per call: 9" in capsys.readouterr().out


def test_ledger_commit_says_dirty_and_takes_an_override(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(git[:-2] + ["init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("1")
    subprocess.run(git + ["add", "f.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert bench.git_commit(repo) == head
    (repo / "f.txt").write_text("2")
    assert bench.git_commit(repo) == head + "+dirty"
    monkeypatch.setenv("TRITONLAB_COMMIT", "abc1234")
    assert bench.git_commit(repo) == "abc1234"


def _script(name):
    """benchmarks/NAME.py, a script, loaded as a module."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ledger_report():
    return _script("ledger_report")


def test_launch_overhead_pairs_its_windows(monkeypatch):
    """launch_overhead.paired_wall times ours and torch's windows in turn (ours first in even
    windows, theirs first in odd ones) and reports each median and the median of the
    windows' own ratios: with the host's speed drifting by 2.9x from one pair of windows to
    the last, each pair's ratio stays 2, where two blocks of windows one after the other (the
    old way) would have set ours in the slow stretch."""
    lo = _script("launch_overhead")
    now, order, speed = [0.0], [], [1.0]

    def calls(name, cost):
        def fn():
            order.append(name)
            now[0] += cost * speed[0]
        return fn
    ours, theirs = calls("ours", 2e-6), calls("theirs", 1e-6)

    monkeypatch.setattr(lo.time, "perf_counter", lambda: now[0])
    seen = []
    real_sync = lo._sync

    def sync():  # after the warm-up's and each window's calls; slower after each pair
        seen.append(order[-1])
        if len(seen) % 2 == 1:
            speed[0] *= 1.3
        real_sync()
    monkeypatch.setattr(lo, "_sync", sync)
    o, t, ratio = lo.paired_wall(ours, theirs, n=4, windows=5)
    assert ratio == pytest.approx(2.0)
    assert order[:8] == ["ours"] * 4 + ["theirs"] * 4  # the warm-up, one function at a time
    assert seen[1:] == ["ours", "theirs", "theirs", "ours", "ours", "theirs", "theirs", "ours",
                        "ours", "theirs"]  # each window's last call, in turn
    assert t == pytest.approx(1.0 * 1.3 ** 3) and o == pytest.approx(2 * t)  # the middle pair


def test_ledger_summary_adds_liger_columns_only_where_the_run_has_liger(tmp_path):
    report = _ledger_report()
    path = tmp_path / "ledger.csv"
    rows = ledger_rows(["torch eager", "torch.compile", "triton"])
    rows[-1]["median_ms"] = 0.25  # ours: twice as fast as the others
    bench.append_ledger(path, rows, {**LEDGER_META, "run": "plain"})
    plain = report.summary(bench.read_ledger(path, run="plain")).splitlines()
    assert "Liger" not in plain[0] and plain[2].count("2.00x") == 2
    bench.append_ledger(path, rows[:2] + ledger_rows(["Liger"], 0.4) + rows[2:],
                        {**LEDGER_META, "run": "liger"})
    table = report.summary(bench.read_ledger(path, run="liger")).splitlines()
    assert table[0].endswith("| vs torch eager | vs torch.compile | vs Liger | vs eager, graph "
                             "| vs compile, graph | vs Liger, graph |")
    assert table[1].count("---") == 12 and " 1.60x " in table[2]


def test_ledger_summary_gives_the_fraction_of_the_same_bytes_copy(tmp_path):
    report = _ledger_report()
    path = tmp_path / "ledger.csv"
    rows = ledger_rows(["torch eager", "same bytes: copy", "triton"])
    rows[0]["median_ms"] = 1.0  # eager: no graph time
    rows[1]["median_ms"], rows[1]["graph_ms"] = 0.45, 0.36  # the copy of the op's bytes
    rows[2]["median_ms"], rows[2]["graph_ms"] = 0.5, 0.4  # ours: 0.9 of the copy
    bench.append_ledger(path, rows, {**LEDGER_META, "run": "same"})
    table = report.summary(bench.read_ledger(path, run="same")).splitlines()
    assert table[0].endswith("| of same-bytes copy (graph) |")
    assert table[2].endswith("| 0.90 (0.90) |") and table[1].count("---") == 11
    plain = report.summary(bench.read_ledger(path, run="same"), impl="torch eager")
    assert plain.splitlines()[2].endswith("| 0.45 (-) |")  # the copy over eager's 1.0 ms


def test_launch_overhead_ops_table_runs(tmp_path):
    """benchmarks/launch_overhead.py --ops (issue 37's table of every public op against torch's,
    forward and forward+backward) runs on the simulator with --small: a row per op, numbers in
    every column, and `--attention-split N:last` names the tuning it ran with first. The figures
    themselves are a GPU's (docs/performance.md)."""
    import sys
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "launch_overhead.py"
    done = subprocess.run([sys.executable, str(script), "--ops", "--small", "--attention-split",
                           "64:last", "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (tmp_path / "launch_ops.txt").read_text().splitlines()
    assert lines[0] == "attention's split_programs_below: 64 (split_combine last)"
    rows = lines[3:]
    names = [r.split()[0] for r in rows]
    assert names == ["add", "gelu", "silu", "softmax", "row_sum", "rmsnorm", "matmul+relu",
                     "attention"]
    for row in rows:
        # (how the ratio column is made, the median of paired windows' ratios, is checked with
        # a fake clock in test_launch_overhead_pairs_its_windows: real timings on a busy CI
        # machine put it 55 % from the ratio of the medians once)
        numbers = [float(v) for v in row.split()[-6:]]
        assert all(v > 0 for v in numbers)
