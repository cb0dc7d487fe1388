"""The order check (`Settings(order=True)`) re-runs a launch in a shuffled order: the shuffle
must change which program runs last, or a "last writer wins" bug passes unseen."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import OrderError, Settings
from minitriton.observe import order as order_check


@triton.jit
def last_writer_wins(out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, pid + offs * 0)  # every program writes the same elements


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
@pytest.mark.parametrize("programs", [2, 3, 8])
def test_a_last_writer_wins_bug_is_caught_with_the_default_seed(executor, programs):
    # with 8 programs the default seed's permutation of 0..7 also ends in 7
    out = np.zeros(4, np.int32)
    with pytest.raises(OrderError, match="depends on the order"):
        last_writer_wins[(programs,)](out, BLOCK=4, minitriton_settings=Settings(
            executor=executor, order=True))


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("n", [2, 3, 8, 33])
def test_the_shuffle_never_ends_with_the_last_program(seed, n):
    order = order_check.shuffled_order(n, seed)
    assert sorted(order.tolist()) == list(range(n))
    assert order[-1] != n - 1


def test_one_program_has_one_order():
    assert order_check.shuffled_order(1, 0).tolist() == [0]


@triton.jit
def last_writer_wins_beside_inf(out_ptr, BLOCK: tl.constexpr):
    # element 0 is inf whoever writes it; the others are the last writer's id
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.where(offs == 0, float("inf"), pid + offs * 0.0))


def test_an_inf_in_the_output_does_not_hide_a_difference():
    # its tolerance scales with the output's largest finite magnitude, not with inf
    out = np.zeros(4, np.float32)
    with pytest.raises(OrderError, match="depends on the order"):
        last_writer_wins_beside_inf[(3,)](out, BLOCK=4,
                                          minitriton_settings=Settings(order=True))
    assert not order_check._differing(np.array([np.inf, 1.0]), np.array([np.inf, 1.0])).size
    assert order_check._differing(np.array([np.inf, 1.0]), np.array([np.inf, 2.0])).tolist() == [1]
