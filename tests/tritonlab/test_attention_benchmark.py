"""benchmarks/attention.py's speed summary (no GPU needed): issue 36's bars from the rows of
one run, tutorial 06's forward among them where --tutorial timed it."""
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import attention as bench  # noqa: E402

LABEL, *_ = bench.SPEED_ROWS[0]


def rows(ours_fwd, tutorial=None, tutorial_ws=None):
    """One speed row's timings (ms): ours and cuDNN at the issue's bars, flash slower,
    tutorial 06's forwards where given."""
    times = {("ours", "fwd"): ours_fwd, ("ours", "fwd+bwd"): 8.0,
             ("sdpa-cudnn", "fwd"): 1.0, ("sdpa-cudnn", "fwd+bwd"): 7.5,
             ("sdpa-flash", "fwd"): 3.0, ("sdpa-flash", "fwd+bwd"): 12.0,
             ("tutorial06", "fwd"): tutorial, ("tutorial06-ws", "fwd"): tutorial_ws}
    return [{"label": LABEL, "impl": impl, "pass": which, "status": "ok", "median_ms": ms}
            for (impl, which), ms in times.items() if ms is not None]


def test_the_tutorial_bar_holds_only_where_the_tutorial_ran():
    (entry,) = bench.speed_summary(rows(1.0))
    assert entry["fwd_vs_tutorial06"] is None and entry["issue 36 met"]


@pytest.mark.parametrize("tutorial, tutorial_ws, ratio, met", [
    (1.1, None, 1.1, True),    # ours faster than the tutorial
    (1.1, 0.9, 0.9, False),    # its warp-specialized forward faster than ours: missed
    (None, 1.0, 1.0, True),    # a tie is at least the tutorial's
])
def test_ours_against_the_tutorials_faster_forward(tutorial, tutorial_ws, ratio, met):
    (entry,) = bench.speed_summary(rows(1.0, tutorial, tutorial_ws))
    assert entry["fwd_vs_tutorial06"] == pytest.approx(ratio)
    assert entry["issue 36 met"] is met
    assert f"| {ratio:.2f}x |" in bench.speed_markdown([entry])


def test_the_tutorial_forward_refuses_what_the_tutorial_does_not_run(tmp_path):
    fn = bench.tutorial_forward(object(), False)
    q = torch.zeros(1, 1, 128, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="fp16 only"):
        fn(q, q, q, False)
    with pytest.raises(FileNotFoundError, match="06-fused-attention.py"):
        bench.load_tutorial(tmp_path)
