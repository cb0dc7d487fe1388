"""Differential fuzzing of minitriton (tests/minitriton/fuzz, docs/fuzzing.md).

On the CPU: generated kernels (hypothesis draws every choice, so a failure shrinks) give the
same bits under both executors, and the integer ones the bits of an independent NumPy
reference; the regression cases of fuzz_seeds.json give the outputs the GPU gave. On a GPU
machine (`gpu` marker): 2000 seeded cases against real Triton 3.6, bit for bit or within the
tolerances of fuzz/compare.py. Both generate without the constructs of fuzz/known.py, where
minitriton is known to differ (their reproducers are strict xfails below).
"""
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minitriton
from fuzz import Case, HypothesisDraw, generate, generate_seeded, run_cases, run_group, summarize
from fuzz.known import KNOWN
from fuzz.reference import evaluate
from fuzz.run import Sim, replay, run_one

SEEDS = json.loads(Path(__file__).with_name("fuzz_seeds.json").read_text())["seeds"]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_generated_kernels_agree_across_executors(data, tmp_path_factory):
    case = generate(HypothesisDraw(data), avoid=KNOWN)
    rec = run_group("h", [case], Sim("lockstep"), Sim("sequential"), tmp_path_factory.mktemp("f"))[0]
    assert rec["status"] == "ok", (case.source(), rec.get("detail") or rec.get("sim_error"))


@pytest.mark.usefixtures("executor")
@settings(max_examples=60, deadline=None)
@given(data=st.data(), category=st.sampled_from(["int", "mask"]))
def test_integer_cases_match_numpy(data, category, tmp_path_factory):
    """Two's-complement wrap-around, C division, shifts, casts: one right answer."""
    case = generate(HypothesisDraw(data), category=category, avoid=KNOWN)
    expected = evaluate(case)
    if expected is None:  # a float somewhere in the tree
        return
    got = run_one(case, Sim(minitriton.current_settings().executor), tmp_path_factory.mktemp("f"))
    for name, want in expected.items():
        assert (got[name] == want).all(), case.source()


def test_seeded_cases_run_on_both_executors():
    """The seeds the GPU run uses, a few of each category, also pass on the CPU."""
    records = run_cases(range(40), real="minitriton-sequential")
    assert summarize(records)["total"]["mismatches"] == 0


def _skew(a):
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        with np.errstate(all="ignore"):
            a[...] = np.where(np.isfinite(a), -a - 1, 0)


class _GroupSkewed(Sim):
    """minitriton whose group kernels (not the one-case kernels) give other floats: what a
    compiler that treats a case differently next to others looks like to the harness."""

    def __init__(self):
        super().__init__()
        self.name = "skewed"

    def launch(self, kernel, args):
        super().launch(kernel, args)
        if not kernel.__name__.rsplit("_", 1)[-1].isdigit():
            for a in args:
                _skew(a)


def test_a_mismatch_only_in_the_group_kernel_is_judged_alone(tmp_path):
    cases = [generate_seeded(s, avoid=KNOWN) for s in range(6)]
    records = run_group("s", cases, Sim(), _GroupSkewed(), tmp_path)
    floats = [r for r, c in zip(records, cases) if any(o.ty.startswith(("fp", "bf"))
                                                      for o in c.outputs)]
    assert floats and all(r["status"] == "ok" for r in records)
    assert all(r.get("group_differs") == "skewed" for r in floats)
    assert summarize(records)["total"]["group_differs"] == len(floats)


def test_a_mismatch_of_the_case_itself_stays_a_mismatch(tmp_path):
    class Skewed(_GroupSkewed):
        def launch(self, kernel, args):
            Sim.launch(self, kernel, args)
            for a in args:
                _skew(a)
    cases = [generate_seeded(s, avoid=KNOWN) for s in range(6)]
    records = run_group("s", cases, Sim(), Skewed(), tmp_path)
    assert any(r["status"] == "mismatch" and not r.get("group_differs") for r in records)


def _seed_params():
    for entry in SEEDS:
        marks = []
        if entry.get("known") in KNOWN:  # still differs; a fixed one is a plain regression case
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[entry["known"]]))
        yield pytest.param(entry, id=entry["id"], marks=marks)


@pytest.mark.parametrize("entry", list(_seed_params()))
def test_regression_cases_match_the_gpu(entry, tmp_path):
    """minitriton against the outputs the H200 gave for the fuzzer's regression cases."""
    if entry["expect"] == "error":
        with pytest.raises(Exception):
            run_one(Case.from_json(entry["case"]), Sim(), tmp_path)
        return
    if "gpu" not in entry:
        pytest.skip("no GPU outputs recorded for this case yet")
    assert replay(entry, Sim(), tmp_path) == []


@pytest.mark.gpu
def test_fuzz_matches_triton():
    pytest.importorskip("torch")
    workers = int(os.environ.get("FUZZ_WORKERS", "4"))
    items = [generate_seeded(s, avoid=KNOWN).to_json() for s in range(2000)]
    records = run_cases(items, real="triton", workers=workers)
    bad = [r for r in records if r["status"] != "ok"]
    assert len(records) == 2000
    assert not bad, [(r["cid"], r["category"], r.get("detail") or r.get("sim_error")
                      or r.get("real_error")) for r in bad[:10]]


@pytest.mark.gpu
@pytest.mark.parametrize("entry", list(_seed_params()))
def test_regression_cases_on_the_gpu(entry, tmp_path):
    """The same cases on real Triton now: minitriton must agree with it (known ones xfail)."""
    pytest.importorskip("torch")
    from fuzz.run import Gpu
    case = Case.from_json(entry["case"])
    if entry["expect"] == "error":
        with pytest.raises(Exception):
            run_one(case, Gpu(), tmp_path)
        with pytest.raises(Exception):
            run_one(case, Sim(), tmp_path)
        return
    rec = run_group("r", [case], Sim(), Gpu(), tmp_path)[0]
    assert rec["status"] == "ok", rec.get("detail") or rec.get("sim_error") or rec.get("real_error")
