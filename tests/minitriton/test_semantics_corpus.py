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
from minitriton import CompilationError

pytestmark = pytest.mark.usefixtures("executor")
K = load(minitriton, tl, SEMANTICS)


def outputs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # block `and` warns; reads outside the view warn
        return run_case(K, name, arrays())


def test_every_case_runs():
    assert set(names("case_", SEMANTICS)) == {
        "case_bool_block", "case_bool_scalars", "case_wait_handoff", "case_wait_tickets",
        "case_wait_counters", "case_storage_not_view", "case_none_and_float_args",
        "case_assigned_constexpr"}
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


def test_a_constexpr_assigned_to_a_name_is_a_tensor():
    # the H200 rejects these four (Triton 3.6's visit_Assign makes the value a tensor), and
    # runs the annotated `B2: tl.constexpr = B * 2`
    assert outputs("case_assigned_constexpr")["out"].tolist() == [2.0] * 8 + [0.0] * 8
    messages = {"arange": "arange's arguments must be of type tl.constexpr",
                "static_range": "static_range", "tuple": "arange's arguments must be",
                "static_assert": "static_assert needs a compile-time condition"}
    for use, message in messages.items():
        with pytest.raises(CompilationError, match=message):
            getattr(K, f"bad_assigned_constexpr_{use}")(arrays(), make_rng())


@minitriton.jit
def scalar_to(out, eps):
    tl.store(out, eps.to(tl.float32) + 0.5)


scalar_to_unspecialized = minitriton.jit(do_not_specialize=["eps"])(scalar_to.fn)


def test_an_int_argument_equal_to_1_is_the_constexpr_1():
    # the H200 (Triton 3.6): 7 gives 7.5; 1 fails to compile, "'int' object has no attribute
    # 'to'" (1 is specialised as a constexpr); do_not_specialize keeps it a tensor
    out = np.zeros(1, np.float32)
    scalar_to[(1,)](out, 7)
    assert out.tolist() == [7.5]
    with pytest.raises(AttributeError, match="'int' object has no attribute 'to'"):
        scalar_to[(1,)](out, 1)
    scalar_to_unspecialized[(1,)](out, 1)
    assert out.tolist() == [1.5]
