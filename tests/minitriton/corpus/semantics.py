# Kernels whose semantics on the GPU are not what Python's would be (issue 21): Python's `and`,
# `or` and `not` on blocks and per-program scalars, programs that wait for another program of
# the same launch, reads outside the view but inside the storage, `None` arguments and Python
# floats used as tensors. Loaded like kernels.py (corpus.load with `triton` and `tl` bound to an
# implementation); test_bool_ops.py and test_progress.py use its kernels on minitriton, and
# test_gpu_parity.py runs its `case_*` functions on minitriton and on real Triton and compares.
# ruff: noqa: F821
import numpy as np

@triton.jit
def issue_kernel(out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    tl.store(out + r * BN + c, (r < M and c < N).to(tl.int32))

@triton.jit
def chain_kernel(x_ptr, out_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    both = x > 0 and x < 10 and x != 5  # a chain folds pairwise
    either = x < 0 or x > 10 or x == 5
    tl.store(out_ptr + o, both.to(tl.int32) + 2 * either.to(tl.int32) + 4 * (not x > 0 and
                                                                          x > -5).to(tl.int32))

@triton.jit
def scalar_kernel(x_ptr, y_ptr, out_ptr, hits_ptr):
    pid = tl.program_id(0)
    # no short-circuit on runtime scalars: the load runs in every program, as on the GPU
    if pid % 2 == 0 and tl.atomic_add(hits_ptr, 1) >= 0:
        tl.store(out_ptr + pid, 1)
    if not pid % 2 == 0 or tl.load(y_ptr + pid) > 100:
        tl.store(out_ptr + pid, tl.load(out_ptr + pid) + 10)
    tl.store(x_ptr + pid, (pid > 1 and pid < 4).to(tl.int32))

@triton.jit
def constexpr_kernel(x_ptr, out_ptr, DEBUG: tl.constexpr, ON: tl.constexpr):
    pid = tl.program_id(0)
    # a constexpr that decides the result short-circuits: the out-of-bounds load never runs
    if DEBUG and tl.load(x_ptr + 1_000_000) > 0:
        tl.store(out_ptr + pid, -1)
    if ON or tl.load(x_ptr + 1_000_000) > 0:
        tl.store(out_ptr + pid, 1)
    # one that does not decide it is dropped: the result is the runtime operand itself
    v = tl.load(x_ptr + pid) and ON
    tl.store(out_ptr + 2 + pid, v)
    # only constexprs: Python's value (a constexpr; assigned to a name it would become a tensor)
    tl.static_assert((True and DEBUG) == DEBUG)

@triton.jit
def wide_kernel(x_ptr, out_ptr, NOT: tl.constexpr):
    x = tl.load(x_ptr)
    if NOT:
        r = not x
    else:
        r = x and x > 1
    tl.store(out_ptr, r)

@triton.jit
def lockstep_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if x > 0 and pid < 3 or not x < 5:  # per-program scalars that differ: programs diverge
        tl.store(out_ptr + pid, 1)
    else:
        tl.store(out_ptr + pid, 2)

def case_bool_block(xp, rng):
    out = xp.full(16, -1, np.int32)
    issue_kernel[(1,)](out, 2, 3, BM=4, BN=4)
    x = xp.put(np.array([-7, -2, 0, 3, 5, 9, 10, 12], np.int32))
    chains = xp.full(8, 0, np.int32)
    chain_kernel[(1,)](x, chains, B=8)
    return {"out": out, "chains": chains}


def case_bool_scalars(xp, rng):
    x, out, hits = xp.full(6, 0, np.int32), xp.full(6, 0, np.int32), xp.full(1, 0, np.int32)
    y = xp.put(np.array([0, 0, 200, 0, 0, 0], np.int32))
    scalar_kernel[(6,)](x, y, out, hits)
    c_x, c_out = xp.put(np.array([5, 7], np.int32)), xp.full(4, 0, np.int32)
    constexpr_kernel[(2,)](c_x, c_out, DEBUG=False, ON=True)
    d_x, d_out = xp.put(np.array([1, -1, 2, 9, 0, -3, 4, 7], np.int32)), xp.full(8, 0, np.int32)
    lockstep_kernel[(8,)](d_x, d_out)
    return {"x": x, "out": out, "hits": hits, "constexpr": c_out, "diverge": d_out}


def bad_bool_of_int32(xp, rng):
    wide_kernel[(1,)](xp.put(np.array([3], np.int32)), xp.full(1, 0, np.int32), NOT=False)


def bad_not_of_int32(xp, rng):
    wide_kernel[(1,)](xp.put(np.array([3], np.int32)), xp.full(1, 0, np.int32), NOT=True)


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


@triton.jit
def wait_chain(flags, out, N: tl.constexpr):
    # program p waits for program p + 1 (the last one starts): the reverse of program-id order
    pid = tl.program_id(0)
    if pid < N - 1:
        while tl.atomic_add(flags + pid + 1, 0) == 0:
            pass
    tl.store(out + pid, tl.load(out + pid + 1) + 1)  # out[N] is 0
    tl.atomic_xchg(flags + pid, 1)


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


@triton.jit
def last_program_reduces(x, partial, counter, out, N: tl.constexpr, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, B)
    tl.store(partial + pid, tl.sum(tl.load(x + pid * B + offs)))
    if tl.atomic_add(counter, 1, sem="acq_rel") == N - 1:  # the last one to arrive
        tl.store(out, tl.sum(tl.load(partial + tl.arange(0, N))))
        tl.atomic_xchg(counter, 0)  # ready for the next launch


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


@triton.jit
def bounded_retry(lock, out, TRIES: tl.constexpr):
    # gives up after TRIES failed attempts: a program that waits only for a while
    got = 0
    for _ in range(TRIES):
        if got == 0:
            if tl.atomic_cas(lock, 0, 1) == 0:
                got = 1
    tl.atomic_add(out + got, 1)


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

def case_wait_handoff(xp, rng):
    outs = {}
    for volatile in (False, True):
        flag, data, out = xp.full(1, 0, np.int32), xp.full(1, 0.0), xp.full(1, 0.0)
        handoff[(2,)](flag, data, out, VOLATILE=volatile)
        outs[f"out_{volatile}"], outs[f"flag_{volatile}"] = out, flag
    flags, chain = xp.full(6, 0, np.int32), xp.full(7, 0, np.int32)
    wait_chain[(6,)](flags, chain, N=6)
    outs["chain"] = chain
    return outs


def case_wait_tickets(xp, rng):
    n = 5
    next_ticket, serving, order = xp.full(1, 0, np.int32), xp.full(1, 0, np.int32), \
        xp.full(n, -1, np.int32)
    reverse_tickets[(n,)](next_ticket, serving, order, N=n)
    t_next, t_serving, t_out = xp.full(1, 0, np.int32), xp.full(1, 0, np.int32), \
        xp.full(4, 0, np.int32)
    t_order = xp.full(n, -1, np.int32)
    ticket_lock[(n,)](t_next, t_serving, t_order, t_out, B=4)
    # the order programs take tickets in depends on the schedule: compare what does not
    return {"order": order, "next": next_ticket, "serving": t_serving,
            "sorted_order": xp.put(np.sort(xp.numpy(t_order))),
            "one_at_a_time": xp.put(np.array([_serial(xp.numpy(t_order)) == xp.numpy(t_out)[0]],
                                             np.int32))}


def _serial(order):
    value = 0
    for pid in order:
        value = value * 2 + int(pid)
    return value


def case_wait_counters(xp, rng):
    n, b = 8, 16
    x = xp.put(np.arange(n * b, dtype=np.float32))
    partial, counter, out = xp.full(n, 0.0), xp.full(1, 0, np.int32), xp.full(1, 0.0)
    for _ in range(2):
        last_program_reduces[(n,)](x, partial, counter, out, N=n, B=b)
    flag, arrived = xp.full(1, 0, np.int32), xp.full(1, 0, np.int32)
    waits_for_last[(9,)](flag, arrived, N=9)
    lock, tries = xp.full(1, 0, np.int32), xp.full(2, 0, np.int32)
    bounded_retry[(3,)](lock, tries, TRIES=20)
    return {"out": out, "counter": counter, "arrived": arrived, "tries": tries}


@triton.jit
def prev(x, y, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y + o, tl.load(x + o - 1))


@triton.jit
def rows(x, y, stride, C: tl.constexpr):
    # reads C columns of row `pid` of a matrix whose rows are `stride` apart
    r = tl.program_id(0)
    c = tl.arange(0, C)
    tl.store(y + r * C + c, tl.load(x + r * stride + c))


def case_storage_not_view(xp, rng):
    base = xp.put(np.arange(9, dtype=np.float32))
    y = xp.full(8, -1.0)
    prev[(1,)](base[1:], y, B=8)  # reads base[0..7]: legal on a GPU
    m = xp.put(rng(4 * 6).reshape(4, 6))
    block = xp.full(3 * 4, -1.0)
    rows[(3,)](m[:, :2], block, 6, C=4)  # a 2-column view read 4 columns wide
    return {"prev": y, "block": block}


@triton.jit
def optional_bias(x, bias, out, eps, B: tl.constexpr):
    o = tl.arange(0, B)
    v = tl.load(x + o)
    if bias is not None:  # None is specialised as a constexpr
        v += tl.load(bias + o)
    tl.store(out + o, v / (eps.to(tl.float32) + 1.0))


def case_none_and_float_args(xp, rng):
    x, bias = xp.put(rng(16)), xp.put(rng(16))
    with_bias, without = xp.full(16, 0.0), xp.full(16, 0.0)
    optional_bias[(1,)](x, bias, with_bias, 0.5, B=16)
    optional_bias[(1,)](x, None, without, 1e-6, B=16)
    return {"with_bias": with_bias, "without": without}


# A name bound by `x = ...` holds a tensor, even when the value is a constexpr (Triton's
# visit_Assign): `x: tl.constexpr = ...` keeps it a constexpr
@triton.jit
def assigned_kernel(out, B: tl.constexpr, USE: tl.constexpr):
    if USE == "arange":
        B2 = B * 2
        tl.store(out + tl.arange(0, B2), 1.0)
    elif USE == "static_range":
        n = B
        acc = 0.0
        for i in tl.static_range(n):
            acc += i
        tl.store(out, acc)
    elif USE == "tuple":
        s = (B, B)
        tl.store(out + tl.arange(0, s[0]), 4.0)
    elif USE == "static_assert":
        w = True and B == 4
        tl.static_assert(w)
    else:
        B2: tl.constexpr = B * 2
        n = B
        if n == 4:  # a runtime condition on the tensor n: fine
            tl.store(out + tl.arange(0, B2), 2.0)


def case_assigned_constexpr(xp, rng):
    out = xp.full(16, 0.0)
    assigned_kernel[(1,)](out, B=4, USE="annotated")
    return {"out": out}


def bad_assigned_constexpr_arange(xp, rng):
    assigned_kernel[(1,)](xp.full(16, 0.0), B=4, USE="arange")


def bad_assigned_constexpr_static_range(xp, rng):
    assigned_kernel[(1,)](xp.full(16, 0.0), B=4, USE="static_range")


def bad_assigned_constexpr_tuple(xp, rng):
    assigned_kernel[(1,)](xp.full(16, 0.0), B=4, USE="tuple")


def bad_assigned_constexpr_static_assert(xp, rng):
    assigned_kernel[(1,)](xp.full(16, 0.0), B=4, USE="static_assert")
