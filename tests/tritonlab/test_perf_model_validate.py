"""benchmarks/perf_model_validate.py, the parts that run anywhere: loading a tutorial without
its tests and benchmarks, and the judge's counts from stored predictions and measurements."""
import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from minitriton.runtime.perf_model import Launch, predict

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("perf_model_validate",
                                                  ROOT / "benchmarks/perf_model_validate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


TUTORIAL = '''
import math
try:
    import not_a_module_anywhere
    HAVE = True
except ImportError:
    HAVE = False
SCALE = 3


def double(x):
    return 2 * x * SCALE


result = double(7)          # runs the tutorial's own code: left out
print("benchmark ran")      # a bare call: left out
ROOT2 = math.sqrt(4)        # settings from other modules stay
if SCALE > 1:
    LIMIT = SCALE * 2
if __name__ == "__main__":
    raise SystemExit("the tutorial's main block must not run")
'''


def test_a_tutorial_loads_its_definitions_and_settings_only(tmp_path, capsys):
    (tmp_path / "99-demo.py").write_text(TUTORIAL)
    m = _module().load_tutorial(tmp_path, "99-demo")
    assert m.double(1) == 6 and m.HAVE is False and m.ROOT2 == 2.0 and m.LIMIT == 6
    assert not hasattr(m, "result")
    assert capsys.readouterr().out == ""


def _launch(nbytes):
    return Launch(bytes=nbytes, programs=4096, num_warps=4, registers=32)


def test_the_judge_counts_predictions_within_1_3x_and_picks_near_the_best(tmp_path):
    v = _module()
    small, big = _launch(1 << 24), _launch(1 << 28)
    t_small, t_big = predict(small, "H200").seconds, predict(big, "H200").seconds
    assert t_big > 5 * t_small
    as_dict = dataclasses.asdict
    pred = {"gpu": "H200", "sample": 16, "date": "d", "pairs": {
        "near": {"seconds": t_small, "launches": [{"kernel": "k", "launch": as_dict(small),
                                                   "bound": "memory"}],
                 "rankings": {"k": [("A", t_small), ("B", t_big)]},
                 "ranked_launches": {"k": {"A": as_dict(small), "B": as_dict(big)}}},
        "far": {"seconds": t_big, "launches": [{"kernel": "j", "launch": as_dict(big),
                                                "bound": "memory"}],
                "rankings": None, "ranked_launches": {}},
    }}
    meas = {"gpu": "H200", "torch": "t", "triton": "3.6.0", "date": "d", "pairs": {
        # the GPU picked B: the pair is predicted in B (t_big) and measured at 1.2x that
        "near": {"median_ms": 9.0, "device_ms": 1.2 * t_big * 1e3, "configs": {
            "k": {"picked": "B", "ms": {"A": 1.0, "B": 2.0},
                  "device_ms": {"A": 1.05, "B": 1.0}}}},  # A, the CPU's pick, is 5 % off
        "far": {"median_ms": 2.5 * t_big * 1e3, "device_ms": 2.5 * t_big * 1e3, "configs": {}},
    }}
    (tmp_path / "p.json").write_text(json.dumps(pred))
    (tmp_path / "m.json").write_text(json.dumps(meas))
    args = SimpleNamespace(predicted=tmp_path / "p.json", measured=tmp_path / "m.json",
                           md=tmp_path / "t.md", timing="device", stored=False)
    assert v.judge(args) == (1, 2, 1, 1)  # near within 1.3x, far 2.5x; the pick 1.05x best
    text = (tmp_path / "t.md").read_text()
    assert "| near | " in text and "| 1.20 |" in text and "| 2.50 |" in text
    args.timing = "do_bench"  # A at 1.0 ms is the best by do_bench
    assert v.judge(args)[2:] == (1, 1)


def test_the_stored_validation_gives_the_documented_figures(tmp_path):
    """docs/hardware.md's validation table is what the model as it is now makes of the stored
    H200 predictions (their Launches) against the H200's stored device times: a change of
    the model that moves these figures must move the table too (and its md file)."""
    v = _module()
    results = ROOT / "docs/results"
    args = SimpleNamespace(predicted=results / "perf-model-predicted-h200-2026-12-06b.json",
                           measured=results / "perf-model-measured-h200-2026-12-06.json",
                           md=tmp_path / "t.md", timing="device", stored=False)
    assert v.judge(args) == (37, 43, 17, 20)
    stored = (results / "perf-model-validation-h200-2026-12-06.md").read_text()
    assert (tmp_path / "t.md").read_text() == stored
