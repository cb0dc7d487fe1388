"""Programs that wait for another program of the same launch (hand-offs through a flag, ticket
locks, "the last program reduces"): the others run while one waits, as on a GPU where they run
concurrently; a DeadlockError only when every unfinished program waits, naming each."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from corpus import SEMANTICS, load
from minitriton import DeadlockError, OrderError, Settings

K = load(triton, tl, SEMANTICS)  # the kernels, shared with the GPU parity test


def launch(kernel, grid, *args, executor, **kwargs):
    settings = Settings(executor=executor, **kwargs.pop("checks", {}))
    return kernel[grid](*args, **kwargs, minitriton_settings=settings)



def test_issue_handoff(executor):
    flag, data, out = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32)
    launch(K.handoff, (2,), flag, data, out, executor=executor,
           checks=dict(order=True, uninitialized=("out",)))
    assert out.tolist() == [42.0] and flag.tolist() == [1]  # the GPU's result



def test_chain_in_reverse_program_order(executor):
    n = 6
    flags, out = np.zeros(n, np.int32), np.zeros(n + 1, np.int32)
    launch(K.wait_chain, (n,), flags, out, N=n, executor=executor)
    assert out[:n].tolist() == [6, 5, 4, 3, 2, 1]




def test_ticket_lock(executor):
    n, b = 5, 4
    next_ticket, serving = np.zeros(1, np.int32), np.zeros(1, np.int32)
    order, out = np.full(n, -1, np.int32), np.zeros(b, np.int32)
    launch(K.ticket_lock, (n,), next_ticket, serving, order, out, B=b, executor=executor)
    assert sorted(order.tolist()) == list(range(n)) and serving.tolist() == [n]
    expected = 0
    for pid in order:  # the critical sections ran one at a time, in ticket order
        expected = expected * 2 + pid
    assert out.tolist() == [expected] * b

    order = np.full(n, -1, np.int32)
    next_ticket[:], serving[:] = 0, 0
    launch(K.reverse_tickets, (n,), next_ticket, serving, order, N=n, executor=executor)
    assert order.tolist() == [4, 3, 2, 1, 0] and next_ticket.tolist() == [n]



def test_last_program_reduces(executor):
    n, b = 8, 16
    x = np.arange(n * b, dtype=np.float32)
    partial, counter, out = np.zeros(n, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32)
    for _ in range(2):
        launch(K.last_program_reduces, (n,), x, partial, counter, out, N=n, B=b,
               executor=executor, checks=dict(order=True))
        assert out.tolist() == [x.sum()] and counter.tolist() == [0]



@pytest.mark.parametrize("n", [3, 9])  # 9: more programs than lockstep's first chunk
def test_everyone_waits_for_the_last_program(executor, n):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    launch(K.waits_for_last, (n,), flag, out, N=n, executor=executor)
    assert out.tolist() == [n]



def test_bounded_retry_is_not_a_deadlock(executor):
    lock, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    launch(K.bounded_retry, (3,), lock, out, TRIES=20, executor=executor)
    assert out.tolist() == [2, 1]  # one program took the lock (never released), two gave up


@triton.jit
def crossed_waits(a, b):
    # program 0 waits for b, which program 1 sets only after a, which program 0 never sets
    pid = tl.program_id(0)
    if pid == 0:
        while tl.atomic_cas(b, 1, 1) != 1:
            pass
        tl.atomic_xchg(a, 1)
    elif pid == 1:
        while tl.atomic_cas(a, 7, 7) != 7:
            pass
        tl.atomic_xchg(b, 1)


def test_true_deadlock_names_every_waiting_program(executor):
    a, b = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(DeadlockError) as info:
        launch(crossed_waits, (3,), a, b, executor=executor)
    msg = str(info.value)
    assert "every unfinished program of the launch waits for another (2 waiting" in msg
    assert "program (0, 0, 0): `b`[0] holds 0, it waits for 1 (atomic_cas)" in msg
    assert "program (1, 0, 0): `a`[0] holds 0, it waits for 7 (atomic_cas)" in msg
    assert "1 finished while they waited" in msg  # program 2 ran to its end
    assert "while tl.atomic_cas(b, 1, 1) != 1" in msg  # the kernel line where each waits
    assert a.tolist() == [0] and b.tolist() == [0]  # the launch's writes are undone



def test_order_check_reports_a_schedule_dependent_handoff(executor):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    launch(K.first_setter_wins, (6,), flag, out, executor=executor)
    assert out.tolist() == flag.tolist() and flag.tolist() != [0]
    flag[:], out[:] = 0, 0
    with pytest.raises(OrderError, match="depends on the order"):
        launch(K.first_setter_wins, (6,), flag, out, executor=executor, checks=dict(order=True))


def test_a_spin_on_a_volatile_load_waits_for_the_other_program(executor):
    flag, data, out = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32)
    launch(K.handoff, (2,), flag, data, out, VOLATILE=True, executor=executor)
    assert out.tolist() == [42.0]


@triton.jit
def volatile_forever(flag):
    while tl.load(flag, volatile=True) != 1:  # nobody sets it
        pass


def test_a_volatile_spin_nobody_ends_is_a_deadlock(executor):
    flag = np.zeros(1, np.int32)
    with pytest.raises(DeadlockError) as info:
        launch(volatile_forever, (2,), flag, executor=executor)
    assert "`flag`[0] holds 0" in str(info.value)
