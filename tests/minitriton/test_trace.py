"""The access recorder (observe/trace.py): what it records must be what the kernel does, under
both executors."""
import inspect

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton.observe.trace import ATOMIC, LOAD, STORE


@minitriton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@minitriton.jit
def racy_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    total = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(out_ptr, tl.load(out_ptr) + total)  # every program: load-add-store of out[0]


@minitriton.jit
def atomic_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


@minitriton.jit
def scale_rows(x_ptr, w_ptr, y_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    w = tl.load(w_ptr + cols)  # the same in every program: a shared load in lockstep
    tl.store(y_ptr + row * N + cols, tl.load(x_ptr + row * N + cols) * w)


@minitriton.jit
def triangle(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(pid + 1):  # a trip count that differs per program: lockstep re-runs
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(y_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


@minitriton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


def _line(kernel, text):
    """The file line of the first source line of a kernel that contains `text`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _add(n=10, block=4):
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 100, np.float32)
    out = np.zeros(n, np.float32)
    with minitriton.trace() as t:
        add_kernel[(minitriton.cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block)
    return t, out


def test_add_each_program_wrote_its_block_and_the_last_masks_two_lanes(executor):
    t, out = _add()
    assert len(t) == 1
    trace = t.last
    assert trace.executor == executor and trace.grid == (3,)
    o = trace.args["out_ptr"]
    assert o.shape == (10,)
    np.testing.assert_array_equal(o.writer(), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    assert (o.kind == STORE).all() and (o.writers() == 1).all()
    np.testing.assert_array_equal(o.values, out)
    x = trace.args["x_ptr"]
    np.testing.assert_array_equal(x.reader(), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    assert (x.kind == LOAD).all() and o.read is False
    # the last program's lanes 2 and 3 are masked: they would have addressed 10 and 11
    for arg in trace.args.values():
        assert arg.masked_program.tolist() == [2, 2]
        assert arg.masked_offset.tolist() == [10, 11]
        assert arg.masked_index.tolist() == [-1, -1]  # past the end of the view
    # steps in program order, each at its kernel line
    line = {name: _line(add_kernel, text) for name, text in
            (("x_ptr", "tl.load(x_ptr"), ("y_ptr", "tl.load(y_ptr"), ("out_ptr", "tl.store"))}
    for step, name in enumerate(("x_ptr", "y_ptr", "out_ptr")):
        arg = trace.args[name]
        assert set(arg.step.tolist()) == {step}
        assert {trace.sites[s].line for s in arg.site} == {line[name]}
    view = trace.program(2)
    assert [(s.step, s.arg, s.kind) for s in view.steps] == \
        [(0, "x_ptr", "load"), (1, "y_ptr", "load"), (2, "out_ptr", "store")]
    assert all(s.indices.tolist() == [8, 9] and s.outside == 2 for s in view.steps)
    assert view.cells() == {(n, i) for n in ("x_ptr", "y_ptr", "out_ptr") for i in (8, 9)}
    assert not trace.races()
    assert trace.source[0].function == "add_kernel"
    assert any("tl.store(out_ptr" in line for line in trace.source[0].lines)


def test_both_executors_record_the_same_accesses():
    def columns(executor):
        with minitriton.configure(executor=executor):
            t, _ = _add(n=37, block=8)
        arg = t.last.args["x_ptr"]
        return sorted(zip(arg.program.tolist(), arg.step.tolist(), arg.index.tolist()))
    assert columns("lockstep") == columns("sequential")


def test_diverged_programs_rerun_by_lockstep_are_recorded_once(executor):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    with minitriton.trace() as t:
        triangle[(4,)](x, y, BLOCK=4)
    arg = t.last.args["x_ptr"]
    for p in range(4):  # program p loads blocks 0..p once each, at steps 0..p
        mine = arg.program == p
        assert sorted(arg.index[mine].tolist()) == list(range(4 * (p + 1)))
        assert sorted(set(arg.step[mine].tolist())) == list(range(p + 1))
    assert t.last.program(3).steps[-1].kind == "store"


def test_a_racy_load_add_store_marks_the_element_it_races_on(executor):
    x = np.ones(12, np.float32)
    out = np.zeros(1, np.float32)
    with minitriton.trace() as t:
        racy_sum[(3,)](x, out, BLOCK=4)
    trace = t.last
    assert trace.races().keys() == {"out_ptr"}
    assert trace.races()["out_ptr"].tolist() == [0]
    o = trace.args["out_ptr"]
    assert o.touched(0) == {"read": [0, 1, 2], "wrote": [0, 1, 2], "atomic": []}
    assert not trace.args["x_ptr"].races().any()


def test_atomics_are_recorded_and_do_not_race(executor):
    x = np.ones(12, np.float32)
    out = np.zeros(1, np.float32)
    with minitriton.trace() as t:
        atomic_sum[(3,)](x, out, BLOCK=4)
    o = t.last.args["out_ptr"]
    assert (o.kind == ATOMIC).all() and sorted(o.program.tolist()) == [0, 1, 2]
    assert o.touched(0)["atomic"] == [0, 1, 2]
    assert o.writers()[0] == 3 and not o.races().any()
    assert out[0] == 12


def test_a_load_shared_by_every_program_is_recorded_for_each(executor):
    x = np.ones((3, 4), np.float32)
    w = np.arange(4, dtype=np.float32)
    y = np.zeros((3, 4), np.float32)
    with minitriton.trace() as t:
        scale_rows[(3,)](x, w, y, N=4)
    arg = t.last.args["w_ptr"]
    assert len(arg) == 12
    assert (arg.readers() == 3).all()
    assert sorted(zip(arg.program.tolist(), arg.index.tolist())) == \
        [(p, i) for p in range(3) for i in range(4)]
    np.testing.assert_array_equal(t.last.args["y_ptr"].writer().reshape(3, 4),
                                  np.repeat(np.arange(3), 4).reshape(3, 4))


def test_one_matmul_program_walks_a_row_panel_of_a_and_a_column_panel_of_b(executor):
    M, N, K, BM, BN, BK = 32, 48, 64, 16, 16, 16
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    with minitriton.trace() as t:
        matmul_kernel[(M // BM, N // BN)](a, b, c, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    trace = t.last
    pid_m, pid_n = 1, 2
    view = trace.program((pid_m, pid_n))
    a_steps, b_steps = view.of("a_ptr"), view.of("b_ptr")
    assert [s.visit for s in a_steps] == [0, 1, 2, 3] == [s.visit for s in b_steps]
    for k, (sa, sb) in enumerate(zip(a_steps, b_steps)):
        rows, cols = np.unravel_index(sa.indices, (M, K))
        assert set(rows.tolist()) == set(range(pid_m * BM, (pid_m + 1) * BM))
        assert set(cols.tolist()) == set(range(k * BK, (k + 1) * BK))
        rows, cols = np.unravel_index(sb.indices, (K, N))
        assert set(rows.tolist()) == set(range(k * BK, (k + 1) * BK))
        assert set(cols.tolist()) == set(range(pid_n * BN, (pid_n + 1) * BN))
        assert sa.step < sb.step  # A's tile is loaded first, then B's, at every k
    (store,) = view.of("c_ptr")
    assert store.kind == "store" and store.step == view.steps[-1].step
    # every element of A is read by the N / BN programs of its row of tiles
    assert (trace.args["a_ptr"].readers() == N // BN).all()
    assert (trace.args["c_ptr"].writers() == 1).all()


def test_a_launch_over_the_trace_limit_raises_a_clear_error():
    x = np.ones(64, np.float32)
    out = np.zeros(64, np.float32)
    settings = minitriton.Settings(trace=True, trace_limit=100)
    with pytest.raises(minitriton.TraceLimitError) as e:
        add_kernel[(8,)](x, x, out, 64, BLOCK_SIZE=8, minitriton_settings=settings)
    text = str(e.value)
    assert "add_kernel" in text and "trace_limit = 100" in text and "smaller" in text
    np.testing.assert_array_equal(out, 0)  # the failed launch's writes are undone
    with minitriton.trace(limit=200) as t:
        add_kernel[(8,)](x, x, out, 64, BLOCK_SIZE=8)
    assert len(t.last.args["out_ptr"]) == 64


def test_tracing_is_off_by_default_and_only_inside_the_block():
    x = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    record = add_kernel[(2,)](x, x, out, 8, BLOCK_SIZE=4)
    assert getattr(record, "trace", None) is None
    with minitriton.trace() as t:
        add_kernel[(2,)](x, x, out, 8, BLOCK_SIZE=4)
        add_kernel[(1,)](x, x, out, 8, BLOCK_SIZE=8)
    assert [tr.grid for tr in t] == [(2,), (1,)]
    assert t.launches[0].record.trace is t.launches[0]
    with pytest.raises(LookupError):
        with minitriton.trace() as empty:
            pass
        empty.last


def test_elements_are_indexed_in_the_view_passed_not_the_storage():
    base = np.arange(20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    with minitriton.trace() as t:
        add_kernel[(2,)](base[3:13], base[3:13], out[5:15], 10, BLOCK_SIZE=8)
    o = t.last.args["out_ptr"]
    assert o.shape == (10,) and o.view_lo == 5
    assert sorted(o.offset.tolist()) == list(range(5, 15))  # storage offsets
    np.testing.assert_array_equal(o.writer(), [0] * 8 + [1] * 2)  # positions in the view
    np.testing.assert_array_equal(o.values, 2 * base[3:13])
    assert o.masked_offset.tolist() == [15, 16, 17, 18, 19, 20]
    assert o.masked_index.tolist() == [-1] * 6


@minitriton.jit
def pick(a_ptr, b_ptr, out_ptr, USE_B: tl.constexpr):
    offs = tl.arange(0, 4)
    base = b_ptr if USE_B else a_ptr
    # a pointer into `a` or `b` lane by lane: a masked lane's address could be either's
    ptrs = tl.where(offs % 2 == 0, a_ptr + offs, b_ptr + offs)
    tl.store(out_ptr + offs, tl.load(ptrs, mask=offs < 3) + tl.load(base + offs))


def test_masked_lanes_of_a_pointer_into_two_arguments_are_counted():
    a, b = np.ones(4, np.float32), np.full(4, 2, np.float32)
    out = np.zeros(4, np.float32)
    with minitriton.trace() as t:
        pick[(1,)](a, b, out, USE_B=False)
    trace = t.last
    assert sorted(trace.args["a_ptr"].index[trace.args["a_ptr"].step == 0].tolist()) == [0, 2]
    assert trace.args["b_ptr"].index.tolist() == [1]
    assert trace.args["a_ptr"].masked_unknown + trace.args["b_ptr"].masked_unknown >= 1
    np.testing.assert_array_equal(out, [2, 3, 2, 1])
