"""benchmarks/compile_check.py's first phase (no Triton needed): the tests run on the
simulator and every launch is recorded with the specialization real Triton would compile."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import compile_check  # noqa: E402


def test_records_each_launch_as_triton_would_specialise_it(tmp_path):
    out = tmp_path / "launches.json"
    compile_check.record(["tests/tritonlab/test_kernels.py", "-k",
                          "exchange_leaves_its_counters"], str(out), 90, tuned=True)
    records = json.loads(out.read_text())
    exchange = [r for r in records if r["kernel"] == "softmax_exchange_kernel"]
    assert exchange, [r["kernel"] for r in records]
    r = exchange[0]
    assert r["module"] == "tritonlab.kernels.softmax"
    # Triton's type strings: canonical int pointers, ints by value, constexprs by name
    assert r["signature"]["x_ptr"] == "*fp32" and r["signature"]["sync_ptr"] == "*i32"
    assert r["signature"]["n_cols"] == "i32" and r["signature"]["BLOCK_SIZE"] == "constexpr"
    assert r["constants"]["ACC"] == {"dtype": "fp32"}
    # pointers marked divisible by 16, as fresh GPU allocations are; n_cols = 700 is not
    assert "x_ptr" in r["divisible"] and "n_cols" not in r["divisible"]
