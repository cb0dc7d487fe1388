"""The cases of corpus/semantics.py on minitriton, against what the GPU computes (the same cases
run on real Triton in test_gpu_parity.py): the kernels' own tests are test_bool_ops.py,
test_progress.py and test_storage_bounds.py; here the cases themselves, as the GPU test runs
them."""
import warnings

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from corpus import SEMANTICS, arrays, load, make_rng, names, run_case

pytestmark = pytest.mark.usefixtures("executor")
K = load(minitriton, tl, SEMANTICS)


def outputs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # block `and` warns; reads outside the view warn
        return run_case(K, name, arrays())


def test_every_case_runs():
    assert set(names("case_", SEMANTICS)) == {
        "case_bool_block", "case_bool_scalars", "case_wait_handoff", "case_wait_tickets",
        "case_wait_counters", "case_storage_not_view", "case_none_and_float_args"}
    out = outputs("case_bool_block")
    assert out["out"].reshape(4, 4).tolist() == [[1, 1, 1, 0], [1, 1, 1, 0], [0] * 4, [0] * 4]
    out = outputs("case_bool_scalars")
    assert out["hits"].tolist() == [6] and out["constexpr"].tolist() == [1, 1, 5, 7]
    out = outputs("case_wait_handoff")
    assert out["out_False"].tolist() == out["out_True"].tolist() == [42.0]
    assert out["chain"][:6].tolist() == [6, 5, 4, 3, 2, 1]
    out = outputs("case_wait_tickets")
    assert out["order"].tolist() == [4, 3, 2, 1, 0] and out["one_at_a_time"].tolist() == [1]
    out = outputs("case_wait_counters")
    assert out["out"].tolist() == [np.arange(128).sum()] and out["tries"].tolist() == [2, 1]


def test_reads_outside_the_view_read_the_storage():
    out = outputs("case_storage_not_view")
    np.testing.assert_array_equal(out["prev"], np.arange(8, dtype=np.float32))
    m = make_rng()(24).reshape(4, 6)
    np.testing.assert_array_equal(out["block"], m[:3, :4].ravel())


def test_none_pointer_and_python_float():
    rng = make_rng()
    x, bias = rng(16), rng(16)
    out = outputs("case_none_and_float_args")
    np.testing.assert_array_equal(out["with_bias"], (x + bias) / np.float32(1.5))
    np.testing.assert_array_equal(out["without"], x / (np.float32(1e-6) + np.float32(1)))
