"""Planted bugs, each caught by the sanitizer meant for it; correct kernels report nothing.
Divergent control flow under lockstep gives exactly the sequential result."""
import pytest
import torch

import minitriton as triton
import minitriton.language as tl
from minitriton import (DeadlockError, OrderError, OutOfBoundsError, PaddingError, RaceError,
                        Settings, UninitializedReadError)

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
    x, y = torch.randn(1000), torch.zeros(1000)
    with pytest.raises(OutOfBoundsError, match=f"{op} out of bounds") as e:
        launch(copy_kernel, (4,), x, y, 1000, BLOCK=256, BUG=bug)
    assert "program (3, 0, 0)" in str(e.value)
    assert torch.count_nonzero(y) == 0
    launch(copy_kernel, (4,), x, y, 1000, BLOCK=256, BUG="none",
           settings=checked(executor, **ALL_CHECKS))
    assert torch.equal(x, y)


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
    x = -torch.rand(8, 100) - 0.5  # all-negative rows, 100 columns in a 128-wide block
    y = torch.empty_like(x)
    with pytest.raises(PaddingError, match="tl.max") as e:
        launch(softmax_kernel, (8,), x, y, 100, BLOCK=128, OTHER=0.0,
               settings=checked(executor, padding=True))
    assert "other=-inf" in str(e.value) and "softmax_kernel" in str(e.value)
    launch(softmax_kernel, (8,), x, y, 100, BLOCK=128, OTHER=float("-inf"),
           settings=checked(executor, **ALL_CHECKS))
    torch.testing.assert_close(y, torch.softmax(x, 1))


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
    g = torch.Generator().manual_seed(0)
    return torch.randn(64, 32, generator=g), torch.randn(64, 32, generator=g)


def test_racy_dg_is_caught_and_loses_updates_in_lockstep(executor):
    x, dy = _dg_inputs()
    ref = (x * dy).sum(0)
    dg = torch.zeros(32)
    with pytest.raises(RaceError) as e:
        launch(dg_kernel, (16,), x, dy, dg, 64, N=32, ROWS=4, MODE="racy",
               settings=checked(executor, races=True))
    msg = str(e.value)
    assert "`dg_ptr`" in msg and "program (0, 0, 0) wrote" in msg and "dg_kernel" in msg
    assert "tl.store(dg_ptr + cols" in msg and "atomic_add" in msg
    assert torch.count_nonzero(dg) == 0
    launch(dg_kernel, (16,), x, dy, dg, 64, N=32, ROWS=4, MODE="racy",
           settings=checked(executor))
    if executor == "lockstep":  # every program read dg before any wrote it: one update survives
        assert not torch.allclose(dg, ref, atol=1e-3)
    else:
        torch.testing.assert_close(dg, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["atomic", "partial"])
def test_fixed_dg_versions_pass_clean(mode, executor):
    x, dy = _dg_inputs()
    dg = torch.zeros(16 * 32 if mode == "partial" else 32)
    launch(dg_kernel, (16,), x, dy, dg, 64, N=32, ROWS=4, MODE=mode,
           settings=checked(executor, **ALL_CHECKS))
    total = dg.reshape(-1, 32).sum(0)
    torch.testing.assert_close(total, (x * dy).sum(0), rtol=1e-5, atol=1e-5)


@triton.jit
def neighbour_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)
    if pid > 0:  # reads what the previous program wrote: a race, and order-dependent
        prev = tl.load(y_ptr + offs - BLOCK)
        tl.store(x_ptr + offs, prev)


def test_read_of_another_programs_write(executor):
    x, y = torch.arange(64.0), torch.zeros(64)
    with pytest.raises(RaceError, match="program \\(0, 0, 0\\) wrote them .* program "
                                        "\\(1, 0, 0\\) read them"):
        launch(neighbour_kernel, (4,), x, y, BLOCK=16, settings=checked(executor, races=True))
    assert torch.equal(x, torch.arange(64.0)) and torch.count_nonzero(y) == 0


@triton.jit
def chain_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid > 0:
        prev = tl.load(x_ptr + (pid - 1) * BLOCK + offs)
        tl.store(x_ptr + pid * BLOCK + offs, prev + 1)


def test_order_dependent_kernel(executor):
    x = torch.zeros(8 * 16)
    with pytest.raises(OrderError, match="depends on the order"):
        launch(chain_kernel, (8,), x, BLOCK=16, settings=checked(executor, order=True))
    assert torch.count_nonzero(x) == 0


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
    x, y = torch.randn(100), torch.empty(100)
    with pytest.raises(UninitializedReadError, match="no program has written") as e:
        launch(scan_kernel, (1,), x, y, 100, BLOCK=128, BUG=True,
               settings=checked(executor, uninitialized=("y_ptr",)))
    assert "`y_ptr`" in str(e.value)
    launch(scan_kernel, (1,), x, y, 100, BLOCK=128, BUG=False,
           settings=checked(executor, uninitialized=("y_ptr",), **ALL_CHECKS))
    assert torch.equal(y, x * 2)


def test_poison_is_visible_in_unwritten_output(executor):
    @triton.jit
    def half_kernel(y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, 1.0, mask=offs < BLOCK // 2)

    y = torch.zeros(8)
    launch(half_kernel, (1,), y, BLOCK=8, settings=checked(executor, uninitialized=("y_ptr",)))
    assert torch.equal(y[:4], torch.ones(4)) and torch.isnan(y[4:]).all()
    with pytest.raises(Exception, match="not a tensor argument"):
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


def test_spin_lock_done_right_passes_every_check(executor):
    lock, counter = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    launch(locked_counter_kernel, (6,), lock, counter, BUG="none",
           settings=checked(executor, **ALL_CHECKS))
    assert counter.item() == 6 and lock.item() == 0


def test_spin_lock_without_release_deadlocks(executor):
    lock, counter = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    with pytest.raises(DeadlockError, match="spins on a lock"):
        launch(locked_counter_kernel, (3,), lock, counter, BUG="no_release",
               settings=checked(executor))


def test_spin_lock_that_does_not_wait_races():
    # only lockstep runs the programs together, so only lockstep sees the failed acquisition
    lock, counter = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    with pytest.raises(RaceError):
        launch(locked_counter_kernel, (4,), lock, counter, BUG="no_wait",
               settings=Settings(races=True))


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
    outs = []
    for ex in ("sequential", "lockstep"):
        args = make()
        kernel[grid](*args, **kwargs, minitriton_settings=Settings(executor=ex))
        outs.append(args)
    return outs


def test_divergent_control_flow_equals_sequential():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8 * 16, generator=g)
    seq, lock = _both(causal_kernel, (8,), lambda: (x.clone(), torch.zeros(8 * 16)), BLOCK=16)
    assert torch.equal(seq[1], lock[1])
    flags = torch.tensor([0, 3, 0, 1, 2, 0, 5, 1], dtype=torch.int32)
    seq, lock = _both(branch_kernel, (8,),
                      lambda: (x.clone(), torch.zeros(8 * 16), flags.clone()), BLOCK=16)
    assert torch.equal(seq[1], lock[1])


def test_spin_lock_order_equals_sequential():
    @triton.jit
    def ticket_kernel(lock_ptr, counter_ptr, order_ptr):
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        t = tl.load(counter_ptr)
        tl.store(order_ptr + t, tl.program_id(0))
        tl.store(counter_ptr, t + 1)
        tl.atomic_xchg(lock_ptr, 0)

    def make():
        return (torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32),
                torch.full((6,), -1, dtype=torch.int32))
    seq, lock = _both(ticket_kernel, (6,), make)
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
        rec = launch(copy_kernel, (1,), torch.ones(4), torch.zeros(4), 4, BLOCK=4, BUG="none")
    assert rec.executor == "sequential"


def test_large_grids_run_in_bounded_chunks():
    x = torch.randn(4096, 64)
    y = torch.empty_like(x)
    settings = Settings(chunk_bytes=1 << 20)  # 64 lanes * 256 B per lane -> 64 programs a chunk
    launch(softmax_kernel, (4096,), x, y, 64, BLOCK=64, OTHER=float("-inf"), settings=settings)
    torch.testing.assert_close(y, torch.softmax(x, 1))


# --------------------------------------------------------------------------- no false reports

def _corpus():
    from corpus import load
    return load(triton, tl)


@pytest.mark.parametrize("name", __import__("corpus").names("case_"))
def test_correct_corpus_kernels_report_nothing(name, executor):
    from corpus import make_rng
    with triton.configure(**ALL_CHECKS):
        getattr(_corpus(), name)("cpu", make_rng("cpu"))


def test_tritonlab_kernels_report_nothing(executor):
    from tritonlab import backend
    ew = backend.with_backend("tritonlab.kernels.elementwise", "sim")
    x = torch.randn(3000)
    with triton.configure(**ALL_CHECKS):
        torch.testing.assert_close(ew.add(x, x), x + x)
        ew.gelu(x)
        ew.silu(x)
