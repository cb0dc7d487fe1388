"""torch.compile analysis: exact graph, break and recompilation counts on the CPU (the "eager"
backend counts graphs without running Inductor, which keeps these tests fast)."""
import pytest
import torch
import torch.nn.functional as F

from tritonlab import compilation as C
from tritonlab.cli import main


def with_item(x):
    y = x * 2
    if y.sum().item() > 0:
        y = y + 1
    return y * 3


def with_where(x):
    y = x * 2
    return torch.where(y.sum() > 0, y + 1, y) * 3


def loop_rows(x):
    out = []
    for i in range(x.shape[0]):
        out.append(x[i] * 2 + 1)
    return torch.stack(out)


def test_graph_breaks():
    r = C.explain(with_item, torch.randn(16))
    assert (r.graphs, r.graph_breaks) == (2, 1)
    assert "item()" in r.break_reasons[0]
    r = C.explain(with_where, torch.randn(16))
    assert (r.graphs, r.graph_breaks) == (1, 0)
    torch._dynamo.reset()
    # torch's versions differ in which dynamo error (Unsupported, UserError) says so
    with pytest.raises(torch._dynamo.exc.TorchDynamoException, match="data-dependent|item"):
        torch.compile(with_item, fullgraph=True, backend="eager")(torch.randn(16))


def test_python_loop_is_unrolled_into_one_graph():
    r = C.explain(loop_rows, torch.randn(8, 4))
    assert (r.graphs, r.graph_breaks) == (1, 0)
    assert sum(r.ops_per_graph) > 3 * 8 > sum(C.explain(lambda x: x * 2 + 1,
                                                        torch.randn(8, 4)).ops_per_graph)


def test_recompilation_counts():
    lengths = [100, 117, 130, 155, 201]

    def total(x):
        return (x * 2).sum()
    plain = C.count_compiles(total, [torch.randn(n) for n in lengths])
    assert plain.compiles == 2 and plain.triggered_by == [0, 1]
    assert "size mismatch" in plain.reasons[0]
    padded = C.count_compiles(total, [F.pad(torch.randn(n), (0, 256 - n)) for n in lengths])
    assert padded.compiles == 1
    marked = C.count_compiles(total, [torch.randn(n) for n in lengths], mark_dynamic=(0, 0))
    assert marked.compiles == 1
    assert "first compilation" in str(plain.table().columns[1]._cells)


def test_speedup_reports_compile_time_apart():
    s = C.speedup(lambda x: x * 2 + 1, torch.randn(64), trials=2, warmup=1, backend="eager")
    assert s.compile_seconds > 0 and s.ratio > 0 and len(s.compiled.samples) == 2


def test_compile_report_command(capsys, monkeypatch):
    monkeypatch.chdir(__import__("pathlib").Path(__file__).parent)
    assert main(["compile-report", "compile_example:breaks_once", "--shapes", "4x8", "8x3"]) == 0
    out = capsys.readouterr().out
    assert "graphs" in out and "item()" in out
    assert main(["compile-report", "compile_example", "--shapes", "4"]) == 2
