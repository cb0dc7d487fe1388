"""Programs that wait for another program of the same launch (hand-offs through a flag, ticket
locks, "the last program reduces"): the others run while one waits, as on a GPU where they run
concurrently; a DeadlockError only when every unfinished program waits, naming each."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import DeadlockError, OrderError, Settings


def launch(kernel, grid, *args, executor, **kwargs):
    settings = Settings(executor=executor, **kwargs.pop("checks", {}))
    return kernel[grid](*args, **kwargs, minitriton_settings=settings)


@triton.jit
def handoff(flag, data, out, VOLATILE: tl.constexpr = False):
    if tl.program_id(0) == 0:
        if VOLATILE:  # a spin on a plain (volatile) load
            while tl.load(flag, volatile=True) != 1:
                pass
        else:
            while tl.atomic_cas(flag, 1, 1) != 1:
                pass
        tl.store(out, tl.load(data))
    else:
        tl.store(data, 42.0)
        tl.atomic_xchg(flag, 1)


def test_issue_handoff(executor):
    flag, data, out = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32)
    launch(handoff, (2,), flag, data, out, executor=executor,
           checks=dict(order=True, uninitialized=("out",)))
    assert out.tolist() == [42.0] and flag.tolist() == [1]  # the GPU's result


@triton.jit
def chain_kernel(flags, out, N: tl.constexpr):
    # program p waits for program p + 1 (the last one starts): the reverse of program-id order
    pid = tl.program_id(0)
    if pid < N - 1:
        while tl.atomic_add(flags + pid + 1, 0) == 0:
            pass
    tl.store(out + pid, tl.load(out + pid + 1) + 1)  # out[N] is 0
    tl.atomic_xchg(flags + pid, 1)


def test_chain_in_reverse_program_order(executor):
    n = 6
    flags, out = np.zeros(n, np.int32), np.zeros(n + 1, np.int32)
    launch(chain_kernel, (n,), flags, out, N=n, executor=executor)
    assert out[:n].tolist() == [6, 5, 4, 3, 2, 1]


@triton.jit
def ticket_lock(next_ticket, serving, order, out, B: tl.constexpr):
    pid = tl.program_id(0)
    ticket = tl.atomic_add(next_ticket, 1)
    while tl.atomic_add(serving, 0) != ticket:  # wait for our turn
        pass
    offs = tl.arange(0, B)
    tl.store(out + offs, tl.load(out + offs) * 2 + pid)  # the critical section
    tl.store(order + ticket, pid)
    tl.atomic_add(serving, 1)  # the next ticket's turn


@triton.jit
def reverse_tickets(next_ticket, serving, order, N: tl.constexpr):
    # tickets handed out in reverse: program N-1 goes first, program 0 waits for all others
    pid = tl.program_id(0)
    ticket = N - 1 - pid
    while tl.atomic_cas(serving, ticket, ticket) != ticket:
        pass
    tl.store(order + ticket, pid)
    tl.atomic_add(next_ticket, 1)
    tl.atomic_xchg(serving, ticket + 1)


def test_ticket_lock(executor):
    n, b = 5, 4
    next_ticket, serving = np.zeros(1, np.int32), np.zeros(1, np.int32)
    order, out = np.full(n, -1, np.int32), np.zeros(b, np.int32)
    launch(ticket_lock, (n,), next_ticket, serving, order, out, B=b, executor=executor)
    assert sorted(order.tolist()) == list(range(n)) and serving.tolist() == [n]
    expected = 0
    for pid in order:  # the critical sections ran one at a time, in ticket order
        expected = expected * 2 + pid
    assert out.tolist() == [expected] * b

    order = np.full(n, -1, np.int32)
    next_ticket[:], serving[:] = 0, 0
    launch(reverse_tickets, (n,), next_ticket, serving, order, N=n, executor=executor)
    assert order.tolist() == [4, 3, 2, 1, 0] and next_ticket.tolist() == [n]


@triton.jit
def last_program_reduces(x, partial, counter, out, N: tl.constexpr, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, B)
    tl.store(partial + pid, tl.sum(tl.load(x + pid * B + offs)))
    if tl.atomic_add(counter, 1, sem="acq_rel") == N - 1:  # the last one to arrive
        tl.store(out, tl.sum(tl.load(partial + tl.arange(0, N))))
        tl.atomic_xchg(counter, 0)  # ready for the next launch


def test_last_program_reduces(executor):
    n, b = 8, 16
    x = np.arange(n * b, dtype=np.float32)
    partial, counter, out = np.zeros(n, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32)
    for _ in range(2):
        launch(last_program_reduces, (n,), x, partial, counter, out, N=n, B=b,
               executor=executor, checks=dict(order=True))
        assert out.tolist() == [x.sum()] and counter.tolist() == [0]


@triton.jit
def waits_for_last(flag, out, N: tl.constexpr):
    # every program but the last waits for the last one's flag: a barrier released at the end
    pid = tl.program_id(0)
    if pid == N - 1:
        tl.atomic_xchg(flag, 1)
    else:
        while tl.atomic_or(flag, 0) == 0:
            pass
    tl.atomic_add(out, 1)


@pytest.mark.parametrize("n", [3, 9])  # 9: more programs than lockstep's first chunk
def test_everyone_waits_for_the_last_program(executor, n):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    launch(waits_for_last, (n,), flag, out, N=n, executor=executor)
    assert out.tolist() == [n]


@triton.jit
def bounded_retry(lock, out, TRIES: tl.constexpr):
    # gives up after TRIES failed attempts: a program that waits only for a while
    got = 0
    for _ in range(TRIES):
        if got == 0:
            if tl.atomic_cas(lock, 0, 1) == 0:
                got = 1
    tl.atomic_add(out + got, 1)


def test_bounded_retry_is_not_a_deadlock(executor):
    lock, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    launch(bounded_retry, (3,), lock, out, TRIES=20, executor=executor)
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


@triton.jit
def first_setter_wins(flag, out):
    # program 0 waits for a flag that any other program may set: who sets it depends on the
    # schedule, which the order check reports
    pid = tl.program_id(0)
    if pid == 0:
        while tl.atomic_cas(flag, 0, 0) == 0:
            pass
        tl.store(out, tl.atomic_add(flag, 0))
    else:
        tl.atomic_cas(flag, 0, pid)


def test_order_check_reports_a_schedule_dependent_handoff(executor):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    launch(first_setter_wins, (6,), flag, out, executor=executor)
    assert out.tolist() == flag.tolist() and flag.tolist() != [0]
    flag[:], out[:] = 0, 0
    with pytest.raises(OrderError, match="depends on the order"):
        launch(first_setter_wins, (6,), flag, out, executor=executor, checks=dict(order=True))


def test_a_spin_on_a_volatile_load_waits_for_the_other_program(executor):
    flag, data, out = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32)
    launch(handoff, (2,), flag, data, out, VOLATILE=True, executor=executor)
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
