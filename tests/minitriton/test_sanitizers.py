"""Planted bugs, each caught by the sanitizer meant for it; correct kernels report nothing.
Divergent control flow under lockstep gives exactly the sequential result."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
import references as ref
from corpus import arrays, load, make_rng, names
from minitriton import (DeadlockError, LaunchError, OrderError, OutOfBoundsError, PaddingError,
                        RaceError, Settings, UninitializedReadError)

corpus = load(triton, tl)

ALL_CHECKS = dict(races=True, order=True, padding=True)


def launch(kernel, grid, *args, settings=None, **kwargs):
    return kernel[grid](*args, **kwargs, minitriton_settings=settings)


def checked(executor, **checks):
    return Settings(executor=executor, **checks)


# --------------------------------------------------------------------------- bounds

@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BUG: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n if BUG == "off_by_one" else offs < n
    if BUG == "load":
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=mask)
    if BUG == "store":
        tl.store(y_ptr + offs, x)
    else:
        tl.store(y_ptr + offs, x, mask=mask)


@pytest.mark.parametrize("bug,op", [("load", "load"), ("store", "store"),
                                    ("off_by_one", "load")])
def test_bounds_bugs(bug, op, executor):
    x, y = ref.rand(1000), np.zeros(1000, np.float32)
    with pytest.raises(OutOfBoundsError, match=f"{op} out of bounds") as e:
        launch(copy_kernel, (4,), x, y, 1000, BLOCK=256, BUG=bug)
    assert "program (3, 0, 0)" in str(e.value)
    assert np.count_nonzero(y) == 0
    launch(copy_kernel, (4,), x, y, 1000, BLOCK=256, BUG="none",
           settings=checked(executor, **ALL_CHECKS))
    np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- padding (exercise 3)

@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, OTHER: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=OTHER)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


def test_wrong_other_for_a_max_reduction(executor):
    # all-negative rows, 100 columns in a 128-wide block
    x = -np.abs(ref.rand((8, 100))) - np.float32(0.5)
    y = np.empty_like(x)
    with pytest.raises(PaddingError, match="tl.max") as e:
        launch(softmax_kernel, (8,), x, y, 100, BLOCK=128, OTHER=0.0,
               settings=checked(executor, padding=True))
    assert "other=-inf" in str(e.value) and "softmax_kernel" in str(e.value)
    launch(softmax_kernel, (8,), x, y, 100, BLOCK=128, OTHER=float("-inf"),
           settings=checked(executor, **ALL_CHECKS))
    np.testing.assert_allclose(y, ref.softmax(x), rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- races (exercise 6)

@triton.jit
def dg_kernel(x_ptr, dy_ptr, dg_ptr, n_rows, N: tl.constexpr, ROWS: tl.constexpr,
              MODE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    acc = tl.zeros([N], dtype=tl.float32)
    for r in range(pid * ROWS, tl.minimum(pid * ROWS + ROWS, n_rows)):
        acc += tl.load(x_ptr + r * N + cols) * tl.load(dy_ptr + r * N + cols)
    if MODE == "racy":  # exercise 6: load-add-store into one shared dg
        tl.store(dg_ptr + cols, tl.load(dg_ptr + cols) + acc)
    elif MODE == "atomic":
        tl.atomic_add(dg_ptr + cols, acc)
    else:  # partial buffer: one row per program, summed afterwards
        tl.store(dg_ptr + pid * N + cols, acc)


def _dg_inputs():
    x, dy = ref.rand((64, 32)), ref.rand((64, 32), seed=1)
    return x, dy, (ref.f64(x) * dy).sum(0)


def test_racy_dg_is_caught_and_loses_updates_in_lockstep(executor):
    x, dy, want = _dg_inputs()
    dg = np.zeros(32, np.float32)
    with pytest.raises(RaceError) as e:
        launch(dg_kernel, (16,), x, dy, dg, 64, N=32, ROWS=4, MODE="racy",
               settings=checked(executor, races=True))
    msg = str(e.value)
    assert "`dg_ptr`" in msg and "program (0, 0, 0) wrote" in msg and "dg_kernel" in msg
    assert "tl.store(dg_ptr + cols" in msg and "atomic_add" in msg
    assert np.count_nonzero(dg) == 0
    launch(dg_kernel, (16,), x, dy, dg, 64, N=32, ROWS=4, MODE="racy",
           settings=checked(executor))
    if executor == "lockstep":  # every program read dg before any wrote it: one update survives
        assert not np.allclose(dg, want, atol=1e-3)
    else:
        np.testing.assert_allclose(dg, want, rtol=1e-5, atol=1e-5)


@triton.jit
def read_add_store_kernel(y_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    tl.store(y_ptr + cols, tl.load(y_ptr + cols) + 1.0)


@pytest.mark.parametrize("programs", [2, 3, 4])
def test_two_racing_programs_lose_an_update_in_lockstep(programs):
    """The first chunk of a lockstep launch holds several programs: two programs racing on
    the same memory both read before either writes, as on a GPU (not one after the other)."""
    y = np.zeros(16, np.float32)
    launch(read_add_store_kernel, (programs,), y, N=16, settings=checked("lockstep"))
    assert (y == 1.0).all()


@pytest.mark.parametrize("mode", ["atomic", "partial"])
def test_fixed_dg_versions_pass_clean(mode, executor):
    x, dy, want = _dg_inputs()
    dg = np.zeros(16 * 32 if mode == "partial" else 32, np.float32)
    launch(dg_kernel, (16,), x, dy, dg, 64, N=32, ROWS=4, MODE=mode,
           settings=checked(executor, **ALL_CHECKS))
    np.testing.assert_allclose(ref.f64(dg).reshape(-1, 32).sum(0), want, rtol=1e-5, atol=1e-5)


@triton.jit
def neighbour_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)
    if pid > 0:  # reads what the previous program wrote: a race, and order-dependent
        prev = tl.load(y_ptr + offs - BLOCK)
        tl.store(x_ptr + offs, prev)


def test_read_of_another_programs_write(executor):
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    with pytest.raises(RaceError, match="program \\(0, 0, 0\\) wrote them .* program "
                                        "\\(1, 0, 0\\) read them"):
        launch(neighbour_kernel, (4,), x, y, BLOCK=16, settings=checked(executor, races=True))
    np.testing.assert_array_equal(x, np.arange(64))
    assert np.count_nonzero(y) == 0


@triton.jit
def chain_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid > 0:
        prev = tl.load(x_ptr + (pid - 1) * BLOCK + offs)
        tl.store(x_ptr + pid * BLOCK + offs, prev + 1)


def test_order_dependent_kernel(executor):
    x = np.zeros(8 * 16, np.float32)
    with pytest.raises(OrderError, match="depends on the order"):
        launch(chain_kernel, (8,), x, BLOCK=16, settings=checked(executor, order=True))
    assert np.count_nonzero(x) == 0


# --------------------------------------------------------------------------- uninitialized reads

@triton.jit
def scan_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BUG: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    written = offs < n - 10 if BUG else mask  # the bug: a wrong bound on the first store
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=written)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, y * 2, mask=mask)


def test_read_of_never_written_output(executor):
    x, y = ref.rand(100), np.empty(100, np.float32)
    with pytest.raises(UninitializedReadError, match="no program has written") as e:
        launch(scan_kernel, (1,), x, y, 100, BLOCK=128, BUG=True,
               settings=checked(executor, uninitialized=("y_ptr",)))
    assert "`y_ptr`" in str(e.value)
    launch(scan_kernel, (1,), x, y, 100, BLOCK=128, BUG=False,
           settings=checked(executor, uninitialized=("y_ptr",), **ALL_CHECKS))
    np.testing.assert_array_equal(y, x * np.float32(2))


def test_poison_is_visible_in_unwritten_output(executor):
    @triton.jit
    def half_kernel(y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, 1.0, mask=offs < BLOCK // 2)

    y = np.zeros(8, np.float32)
    launch(half_kernel, (1,), y, BLOCK=8, settings=checked(executor, uninitialized=("y_ptr",)))
    np.testing.assert_array_equal(y[:4], np.ones(4))
    assert np.isnan(y[4:]).all()
    with pytest.raises(LaunchError, match="not a tensor argument"):
        launch(half_kernel, (1,), y, BLOCK=8, settings=checked(executor, uninitialized=("z",)))


# --------------------------------------------------------------------------- spin locks

@triton.jit
def locked_counter_kernel(lock_ptr, counter_ptr, BUG: tl.constexpr):
    if BUG == "no_wait":
        tl.atomic_cas(lock_ptr, 0, 1)  # does not wait for the lock
    else:
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
    tl.store(counter_ptr, tl.load(counter_ptr) + 1)
    if BUG != "no_release":
        tl.atomic_xchg(lock_ptr, 0)


def _lock_and_counter():
    return np.zeros(1, np.int32), np.zeros(1, np.int32)


def test_spin_lock_done_right_passes_every_check(executor):
    lock, counter = _lock_and_counter()
    launch(locked_counter_kernel, (6,), lock, counter, BUG="none",
           settings=checked(executor, **ALL_CHECKS))
    assert counter.tolist() == [6] and lock.tolist() == [0]


def test_spin_lock_without_release_deadlocks(executor):
    lock, counter = _lock_and_counter()
    with pytest.raises(DeadlockError, match="spins on a lock"):
        launch(locked_counter_kernel, (3,), lock, counter, BUG="no_release",
               settings=checked(executor))


def test_spin_lock_that_does_not_wait_races():
    # only lockstep runs the programs together, so only lockstep sees the failed acquisition
    lock, counter = _lock_and_counter()
    with pytest.raises(RaceError):
        launch(locked_counter_kernel, (4,), lock, counter, BUG="no_wait",
               settings=Settings(races=True))


# --------------------------------------------------------------------------- meeting at a counter

@triton.jit
def meet_kernel(part_ptr, count_ptr, out_ptr, PIECES: tl.constexpr, BUG: tl.constexpr):
    """Each program stores a partial, arrives at its row's counter, waits for the row's other
    programs and sums their partials: release then acquire orders the stores before the
    loads (a grid-synchronised exchange, as tritonlab's long-row softmax)."""
    pid = tl.program_id(0)
    row = pid // PIECES
    tl.store(part_ptr + pid, pid * 1.0 + 1.0)
    if BUG == "relaxed":
        tl.atomic_add(count_ptr + row, 1, sem="relaxed")
    else:
        tl.atomic_add(count_ptr + row, 1, sem="release")
    if BUG != "no_wait":
        while tl.atomic_cas(count_ptr + row, PIECES, PIECES, sem="acquire") != PIECES:
            pass
    j = tl.arange(0, PIECES)
    tl.store(out_ptr + pid, tl.sum(tl.load(part_ptr + row * PIECES + j), axis=0))


def _meet(bug, executor):
    part, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    count = np.zeros(2, np.int32)
    launch(meet_kernel, (8,), part, count, out, PIECES=4, BUG=bug,
           settings=checked(executor, races=True))
    return out, count


def test_programs_meeting_at_a_counter_do_not_race(executor):
    out, count = _meet("none", executor)
    assert out.tolist() == [10.0] * 4 + [26.0] * 4 and count.tolist() == [4, 4]


@pytest.mark.parametrize("bug", ["no_wait", "relaxed"])
def test_meeting_without_waiting_or_release_races(bug):
    # lockstep: every program stores before any loads, so only the race sanitizer tells
    with pytest.raises(RaceError, match="argument `part_ptr`"):
        _meet(bug, "lockstep")


# --------------------------------------------------------------------------- divergence

@triton.jit
def causal_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, pid + 1):  # loop bound depends on the program, as in causal attention
        acc += tl.load(x_ptr + j * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def branch_kernel(x_ptr, out_ptr, flag_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if pid == 0:
        x = x * 100
    elif tl.load(flag_ptr + pid) > 0:
        x = -x
    n = tl.load(flag_ptr + pid)
    while n > 0:  # data-dependent while
        x = x + 1
        n -= 1
    tl.store(out_ptr + offs, x)


def _both(kernel, grid, make, **kwargs):
    """The arguments after a sequential and after a lockstep launch, each on fresh ones."""
    outs = []
    for ex in ("sequential", "lockstep"):
        args = make()
        kernel[grid](*args, **kwargs, minitriton_settings=Settings(executor=ex))
        outs.append(args)
    return outs


def test_divergent_control_flow_equals_sequential():
    x = ref.rand(8 * 16)
    seq, lock = _both(causal_kernel, (8,), lambda: (x.copy(), np.zeros(8 * 16, np.float32)),
                      BLOCK=16)
    np.testing.assert_array_equal(seq[1], lock[1])
    flags = np.array([0, 3, 0, 1, 2, 0, 5, 1], np.int32)
    seq, lock = _both(branch_kernel, (8,),
                      lambda: (x.copy(), np.zeros(8 * 16, np.float32), flags.copy()), BLOCK=16)
    np.testing.assert_array_equal(seq[1], lock[1])


def test_spin_lock_order_equals_sequential():
    def make():
        return (*_lock_and_counter(), np.full(6, -1, np.int32))
    seq, lock = _both(corpus.spin_lock_kernel, (6,), make)
    assert seq[2].tolist() == lock[2].tolist() == [0, 1, 2, 3, 4, 5]


def test_settings_from_environment_and_per_launch():
    s = Settings.from_env({"MINITRITON_EXECUTOR": "sequential",
                           "MINITRITON_SANITIZE": "races,order,uninitialized=y+z"})
    assert s == Settings(executor="sequential", races=True, order=True, uninitialized=("y", "z"))
    with pytest.raises(ValueError, match="unknown check"):
        Settings.from_env({"MINITRITON_SANITIZE": "bogus"})
    with pytest.raises(ValueError, match="unknown executor"):
        Settings(executor="parallel")
    with triton.configure(executor="sequential"):
        rec = launch(copy_kernel, (1,), np.ones(4, np.float32), np.zeros(4, np.float32), 4,
                     BLOCK=4, BUG="none")
    assert rec.executor == "sequential"


def test_large_grids_run_in_bounded_chunks():
    x = ref.rand((4096, 64))
    y = np.empty_like(x)
    settings = Settings(chunk_bytes=1 << 20)  # 64 lanes * 256 B per lane -> 64 programs a chunk
    launch(softmax_kernel, (4096,), x, y, 64, BLOCK=64, OTHER=float("-inf"), settings=settings)
    np.testing.assert_allclose(y, ref.softmax(x), rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- no false reports

@pytest.mark.parametrize("name", names("case_"))
def test_correct_corpus_kernels_report_nothing(name, executor):
    with triton.configure(**ALL_CHECKS):
        getattr(corpus, name)(arrays(), make_rng())
