"""tritonlab's lecture kernels against float64 PyTorch references, on the active backend
(minitriton here; real Triton with CUDA tensors on a GPU machine)."""
import pytest
import torch

import torch_references as ref
from torch_references import DEV, DTYPES, MATMUL_TOLERANCES, TOLERANCES, rand, rel_err
from tritonlab import backend
from tritonlab.kernels import matmul as mm
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import rowsum
from tritonlab.kernels import softmax as sm


# -- softmax: shapes exercise 1 row, non-powers of two, short rows (several per program),
#    rows longer than a block (online kernel), leading dimensions
SOFTMAX_SHAPES = [(1, 7), (300, 781), (5, 3, 1000), (64, 16), (3, 20000)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SOFTMAX_SHAPES)
def test_softmax(shape, dtype):
    x = rand(*shape, dtype=dtype, scale=3)
    y = sm.softmax(x)
    assert y.dtype == dtype and y.shape == x.shape
    assert rel_err(y, ref.softmax(x)) < TOLERANCES[dtype]


@pytest.mark.parametrize("variant,block", [("row", None), ("rows", None), ("online", 128),
                                           ("split", 128), ("exchange", 128), ("loop", None)])
def test_softmax_variants_and_invariants(variant, block):
    x = rand(33, 700, scale=5)
    y = sm.softmax(x, variant=variant, block_size=block)
    assert rel_err(y, ref.softmax(x)) < 2e-6
    torch.testing.assert_close(y.sum(-1), torch.ones(33, device=DEV, dtype=y.dtype))
    torch.testing.assert_close(sm.softmax(x + 100.0, variant=variant, block_size=block), y,
                               rtol=1e-5, atol=1e-6)  # shift invariance


@pytest.mark.parametrize("variant,block", [("row", None), ("rows", None), ("online", 64),
                                           ("split", 32), ("exchange", 64), ("loop", None)])
def test_softmax_rows_of_minus_infinity_match_torch(variant, block):
    x = rand(5, 200)
    x[1] = float("-inf")
    x[2, :150] = float("-inf")
    x[3, :128] = float("-inf")  # a NaN alone in its piece (exchange) or chunk (split)
    x[3, 70] = float("nan")
    y = sm.softmax(x, variant=variant, block_size=block)
    torch.testing.assert_close(y, torch.softmax(x, -1), equal_nan=True)


def test_softmax_other_dim_and_fp64():
    x = rand(6, 50, 4, dtype=torch.float64)
    torch.testing.assert_close(sm.softmax(x, dim=1), torch.softmax(x, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 4096), (3, 5000), (2, 3, 1025)])
def test_row_sum(shape, dtype):
    x = rand(*shape, dtype=dtype)
    out = rowsum.row_sum(x)
    assert out.shape == x.shape[:-1] and out.dtype == dtype
    want = x.double().sum(-1)
    assert (out.double() - want).abs().max() <= TOLERANCES[dtype] * 50 * (1 + want.abs().max())


# -- matmul: tall/skinny, non-multiples of the tile, K smaller than a tile, transposed inputs
MATMUL_SHAPES = [(1, 1, 1), (70, 90, 50), (300, 17, 5), (8, 1000, 3), (129, 65, 257)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mkn", MATMUL_SHAPES)
@pytest.mark.parametrize("activation", mm.ACTIVATIONS)
def test_matmul(mkn, dtype, activation):
    M, K, N = mkn
    a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype, seed=1)
    want = ref.matmul(a, b, activation)
    out = mm.matmul(a, b, activation)
    assert out.dtype == dtype and out.shape == (M, N)
    assert rel_err(out, want) < MATMUL_TOLERANCES[dtype] + (1e-12 if want.norm() else 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_transposed_and_strided_inputs(dtype):
    a = rand(90, 70, dtype=dtype).t()  # (70, 90), column-major
    b = rand(50, 180, dtype=dtype, seed=1)[:, ::2].t()  # (90, 50), non-contiguous
    assert rel_err(mm.matmul(a, b), ref.matmul(a, b)) < MATMUL_TOLERANCES[dtype]
    assert rel_err(mm.matmul_relu_lecture(a, b), ref.matmul(a, b, "relu")) < \
        MATMUL_TOLERANCES[dtype]


# the persistent TMA kernel: rows must be 16-byte aligned (K, N multiples of 8 in 16 bits)
TMA_SHAPES = [(1, 16, 8), (70, 96, 56), (300, 64, 136), (129, 520, 264), (8, 1024, 8)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mkn", TMA_SHAPES)
@pytest.mark.parametrize("activation", mm.ACTIVATIONS)
def test_matmul_tma(mkn, dtype, activation):
    M, K, N = mkn
    a, b = rand(M, K, dtype=dtype, seed=2), rand(K, N, dtype=dtype, seed=3)
    out = mm.matmul(a, b, activation, kernel="tma")
    assert out.dtype == dtype and out.shape == (M, N)
    assert rel_err(out, ref.matmul(a, b, activation)) < MATMUL_TOLERANCES[dtype]


def test_matmul_tma_stores_wide_tiles_in_halves():
    """Tiles of BLOCK_N >= 256 leave in two half-width stores (matmul_tma_kernel's epilogue):
    3 programs over 2 x 3 tiles, the last column of tiles with its left half clipped at N and
    its right half past N; C starts as NaN, so an element no store reaches fails."""
    M, K, N, bm, bn, bk = 70, 40, 600, 64, 256, 32
    a, b = rand(M, K, dtype=torch.float16, seed=4), rand(K, N, dtype=torch.float16, seed=5)
    c = torch.full((M, N), float("nan"), device=DEV, dtype=torch.float16)
    assert mm._c_block(bm, bn) == [bm, bn // 2] and mm._c_block(bm, 128) == [bm, 128]
    desc = backend.TensorDescriptor.from_tensor
    mm.matmul_tma_kernel[(3,)](desc(a, [bm, bk]), desc(b, [bk, bn]), desc(c, mm._c_block(bm, bn)),
                               M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                               ACTIVATION="relu", num_warps=4, num_stages=3)
    assert rel_err(c, ref.matmul(a, b, "relu")) < MATMUL_TOLERANCES[torch.float16]


def test_matmul_tma_needs_aligned_rows():
    a, b = rand(64, 96, dtype=torch.float16), rand(96, 40, dtype=torch.float16)
    with pytest.raises(ValueError, match="16-byte aligned"):
        mm.matmul(a, b.t().contiguous().t(), kernel="tma")  # column-major b
    with pytest.raises(ValueError, match="16-byte aligned"):
        mm.matmul(rand(64, 90, dtype=torch.float16), b[:90], kernel="tma")  # rows 180 B apart
    with pytest.raises(ValueError, match="kernel must be one of"):
        mm.matmul(a, b, kernel="cublas")
    with pytest.raises(ValueError, match="fp16/bf16"):
        mm.matmul(a.float(), b.float(), kernel="tma")
    with pytest.raises(ValueError, match="16-byte aligned"):
        mm.matmul(a[:1].expand(64, 96), b, kernel="tma")  # broadcast rows
    # the default picks what the layout allows: still right for column-major b
    assert rel_err(mm.matmul(a, b.t().contiguous().t()), ref.matmul(a, b)) < \
        MATMUL_TOLERANCES[torch.float16]


def test_matmul_bad_inputs():
    a = rand(4, 5)
    with pytest.raises(ValueError, match="do not chain"):
        mm.matmul(a, rand(4, 5))
    with pytest.raises(ValueError, match="activation"):
        mm.matmul(a, rand(5, 3), "tanh")
    with pytest.raises(TypeError, match="dtypes differ"):
        mm.matmul(a, rand(5, 3, dtype=torch.float16))
    with pytest.raises(ValueError, match="2-D"):
        mm.matmul(rand(2, 4, 5), rand(5, 3))
    assert mm.matmul(rand(0, 5), rand(5, 3)).shape == (0, 3)
    assert torch.count_nonzero(mm.matmul(rand(4, 0), rand(0, 3))) == 0


# -- RMSNorm: any leading shape, fp32 statistics, autograd
RMS_SHAPES = [(1, 8), (4, 1000), (2, 3, 257), (64, 4096), (3, 16500),  # wide rows from here:
              (2, 40000), (1, 140000)]  # the exchange kernels (Hopper's tuning)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", RMS_SHAPES)
def test_rmsnorm_forward_and_backward(shape, dtype):
    x = rand(*shape, dtype=dtype).requires_grad_()
    g = rand(shape[-1], dtype=dtype, seed=2).requires_grad_()
    dy = rand(*shape, dtype=dtype, seed=3)
    y = rn.rmsnorm(x, g)
    assert y.dtype == dtype and y.shape == x.shape
    y.backward(dy)
    y_ref, dx_ref, dg_ref = ref.rmsnorm_grads(x, g, dy)
    tol = TOLERANCES[dtype] * 5
    assert rel_err(y, y_ref) < tol
    assert rel_err(x.grad, dx_ref) < tol
    assert rel_err(g.grad, dg_ref) < tol


def test_rmsnorm_gradcheck_float64():
    x = rand(3, 5, 33, dtype=torch.float64).requires_grad_()
    g = rand(33, dtype=torch.float64, seed=1).requires_grad_()
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))


@pytest.mark.parametrize("rows_per_program", [1, 3, 64])
def test_rmsnorm_partial_dg_buffer(rows_per_program):
    x, g, dy = rand(50, 96), rand(96, seed=1), rand(50, 96, seed=2)
    _, rstd = rn.rmsnorm_forward(x, g)
    dx, dg = rn.rmsnorm_backward(dy, x, g, rstd, rows_per_program=rows_per_program)
    _, dx_ref, dg_ref = ref.rmsnorm_grads(x, g, dy)
    assert rel_err(dx, dx_ref) < 1e-5 and rel_err(dg, dg_ref) < 1e-5


def _backward_inputs(M, N, dtype):
    """(x, g, dy, rstd) of an RMSNorm backward launched by hand: rows of N, the forward's rstd."""
    x, g, dy = rand(M, N, dtype=dtype), rand(N, dtype=dtype, seed=1), rand(M, N, dtype=dtype,
                                                                          seed=2)
    return x, g, dy, rn.rmsnorm_forward(x, g)[1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,rows", [((37, 100), 5), ((9, 256), 4), ((1, 64), 3), ((8, 33), 8)])
def test_rmsnorm_backward_prefetch_is_the_same_computation(shape, rows, dtype):
    # the whole-row backward with the next row loaded ahead (PREFETCH, the default for short
    # rows) or the next two (PREFETCH=2, RMSNormTuning.bwd_prefetch_rows): the same bits as
    # one row at a time, the last program's rows running past the end
    M, N = shape
    x, g, dy, rstd = _backward_inputs(M, N, dtype)
    programs = -(-M // rows)
    outs = []
    for prefetch in (False, True, 2):
        dx, partial = torch.empty_like(x), torch.empty(programs, N, device=DEV)
        rn.rmsnorm_bwd_kernel[(programs,)](x, g, rstd, dy, dx, partial, M, N, rows,
                                           BLOCK_SIZE=backend.triton.next_power_of_2(N),
                                           ACC=backend.tl.float32, PREFETCH=prefetch)
        outs.append((dx, partial))
    for dx, partial in outs[1:]:
        assert torch.equal(outs[0][0], dx) and torch.equal(outs[0][1], partial)
    _, dx_ref, _ = ref.rmsnorm_grads(x.double(), g.double(), dy.double())
    assert rel_err(outs[1][0], dx_ref) < TOLERANCES[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,rows", [((37, 96), 5), ((64, 200), 8), ((9, 256), 4), ((1, 64), 3)])
def test_rmsnorm_backward_through_tma(shape, rows, dtype):
    # rmsnorm_bwd_tma_kernel (x and dy brought in by TMA in a pipelined row loop, dx stored by
    # TMA or by pointers): the pointer kernel's dx and partial rows of dg, within rounding
    # (its row sum in another layout), rows that do not fill the block (zero-filled past the
    # row's end), the last program's rows running past the end
    M, N = shape
    x, g, dy, rstd = _backward_inputs(M, N, dtype)
    programs, block = -(-M // rows), backend.triton.next_power_of_2(N)
    want_dx, want = torch.empty_like(x), torch.empty(programs, N, device=DEV)
    rn.rmsnorm_bwd_kernel[(programs,)](x, g, rstd, dy, want_dx, want, M, N, rows,
                                       BLOCK_SIZE=block, ACC=backend.tl.float32)
    backend.triton.set_allocator(
        lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEV))
    for stages, tma_store in ((3, True), (2, False), (1, True)):
        dx, partial = torch.full_like(x, float("nan")), torch.empty(programs, N, device=DEV)
        rn.rmsnorm_bwd_tma_kernel[(programs,)](x, g, rstd, dy, dx, partial, M, N, rows,
                                               BLOCK_SIZE=block, ACC=backend.tl.float32,
                                               STAGES=stages, TMA_STORE=tma_store)
        torch.testing.assert_close(dx, want_dx, rtol=TOLERANCES[dtype], atol=1e-6)
        torch.testing.assert_close(partial, want, rtol=1e-6, atol=1e-6)


# -- the wide-row kernels (a chunked forward; a chunked coefficient pass and 2-D tiles in the
#    backward): chunks and tiles that do not divide the row, a chunk wider than the row, row
#    blocks that run past the last row, one row per tile
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,chunk,tile,rows_per_program", [
    ((5, 1000), 256, (2, 256), 2), ((7, 64), 256, (4, 128), 3), ((3, 512), 128, (1, 512), 1),
    ((9, 777), 512, (4, 256), 8)])
def test_rmsnorm_wide_row_kernels(shape, chunk, tile, rows_per_program, dtype):
    x, g = rand(*shape, dtype=dtype, scale=2), rand(shape[1], dtype=dtype, seed=1)
    dy = rand(*shape, dtype=dtype, seed=2)
    y, rstd = rn._forward(x, g, 1e-6, chunk=chunk)
    dx, dg = rn._backward(dy, x, g, rstd, rows_per_program, chunk=chunk, tile=tile)
    y_ref, dx_ref, dg_ref = ref.rmsnorm_grads(x, g, dy)
    tol = TOLERANCES[dtype] * 5
    assert rel_err(y, y_ref) < tol and rel_err(dx, dx_ref) < tol and rel_err(dg, dg_ref) < tol
    assert dg.dtype == dtype and rstd.dtype == torch.float32
    torch.testing.assert_close(rstd.double(), x.double().pow(2).mean(-1).add(1e-6).rsqrt(),
                               rtol=2e-6, atol=0)


def test_rmsnorm_wide_row_backward_is_race_free(executor):
    """Each program owns its columns of one row of the partial-dg buffer: the race sanitizer
    finds nothing, and no padded lane reaches a result (on the simulator, either executor)."""
    import minitriton
    sim = backend.with_backend("tritonlab.kernels.rmsnorm", "sim")
    g0 = torch.Generator().manual_seed(0)
    x, g, dy = (torch.randn(*shape, generator=g0) for shape in [(10, 300), (300,), (10, 300)])
    with minitriton.configure(races=True, order=True, padding=True):
        _, rstd = sim._forward(x, g, 1e-6, chunk=128)
        dx, dg = sim._backward(dy, x, g, rstd, 3, chunk=128, tile=(2, 128))
    _, dx_ref, dg_ref = ref.rmsnorm_grads(x, g, dy)
    assert rel_err(dx, dx_ref) < 1e-5 and rel_err(dg, dg_ref) < 1e-5


def test_rmsnorm_empty_inputs():
    """No rows, or rows of no columns: empty outputs and gradients; the statistic of an empty
    row is NaN, as torch's formula gives (0/0), never leftover memory."""
    y, rstd = rn.rmsnorm_forward(rand(3, 0), rand(0))
    assert y.shape == (3, 0) and torch.isnan(rstd).all()
    y, rstd = rn.rmsnorm_forward(rand(0, 5), rand(5))
    assert y.shape == (0, 5) and rstd.shape == (0,)
    x, g = rand(0, 5).requires_grad_(), rand(5).requires_grad_()
    rn.rmsnorm(x, g).sum().backward()
    assert x.grad.shape == (0, 5) and torch.equal(g.grad, torch.zeros_like(g))


def test_rmsnorm_module_and_bad_inputs():
    layer = rn.RMSNorm(16).to(DEV)
    x = rand(4, 16)
    torch.testing.assert_close(layer(x), ref.rmsnorm(x, torch.ones(16, device=DEV)).float())
    with pytest.raises(ValueError, match="does not match"):
        rn.rmsnorm(rand(4, 16), rand(8))
    with pytest.raises(TypeError, match="dtype"):
        rn.rmsnorm(rand(4, 16).int(), rand(16))


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_broadcast_inputs(dtype):
    """Expanded inputs (stride 0) are read in place, every row or column the same."""
    a = rand(1, 48, dtype=dtype).expand(30, 48)
    b = rand(48, 1, dtype=dtype, seed=1).expand(48, 20)
    assert rel_err(mm.matmul(a, b), ref.matmul(a, b)) < MATMUL_TOLERANCES[dtype]


def test_matmul_reads_transposed_inputs_in_place(monkeypatch):
    """The matmul kernels take strides: a transposed input is read where it is, not copied."""
    a = rand(64, 32).t()  # (32, 64), column-major
    b = rand(64, 48, seed=1)
    want = ref.matmul(a, b)

    def no_copy(self, *args, **kwargs):
        raise AssertionError("matmul copied an input with .contiguous()")
    monkeypatch.setattr(torch.Tensor, "contiguous", no_copy)
    out = mm.matmul(a, b)
    monkeypatch.undo()
    assert rel_err(out, want) < MATMUL_TOLERANCES[torch.float32]


def test_softmax_exchange_leaves_its_counters_zero_and_refuses_too_many_pieces():
    """The exchange kernel's programs meet at per-row counters: after a launch every counter
    is 0 again (the next launch reuses the buffer), whatever the rows' lengths, with a row per
    group of programs or groups walking rows in a pipelined loop (STAGES; on a GPU with the
    meeting in PTX); a row cut into more programs than may be resident at once is refused
    with the way out."""
    for n_rows, n_cols, block in ((3, 700, 128), (2, 64, 64), (4, 5, 2), (5, 300, 128)):
        x = rand(n_rows, n_cols, scale=4)
        pieces = -(-n_cols // block)
        stats = torch.full((n_rows, pieces, 2), float("nan"), device=DEV)
        sync = torch.zeros(2 * n_rows, dtype=torch.int32, device=DEV)
        for groups, kw in ((n_rows, {}), (2, {"STAGES": 2, "PTX": DEV == "cuda"})):
            for _ in range(2):
                y = torch.empty_like(x)
                sm.softmax_exchange_kernel[(groups * pieces,)](
                    x, y, stats, sync, n_rows, n_cols, n_cols, pieces, groups,
                    BLOCK_SIZE=block, PIECES=backend.triton.next_power_of_2(pieces),
                    ACC=backend.tl.float32, **kw)
                assert rel_err(y, ref.softmax(x)) < 2e-6
                assert not sync.any()
    x = rand(2, 16)
    too_many = (sm._exchange.max_pieces(x) + 1) * 16
    with pytest.raises(ValueError, match="resident at once.*larger block_size"):
        sm.softmax(rand(2, too_many), variant="exchange", block_size=16)


def test_softmax_split_cuts_rows_into_chunks_with_no_empty_one():
    """The split variant: more than one program per row, chunks a multiple of the block, none
    empty, and the result torch's for rows that end mid-block and mid-chunk."""
    t = sm.tuning_for("softmax", -1)
    for n_rows, n_cols, block in ((1, 5000, 128), (3, 700, 128), (2, 64, 64), (5, 1, 2)):
        chunks, chunk = sm._chunks(n_rows, n_cols, block, rand(1), t)
        assert chunk % block == 0 and (chunks - 1) * chunk < n_cols <= chunks * chunk
        x = rand(n_rows, n_cols, scale=4)
        assert rel_err(sm.softmax(x, variant="split", block_size=block), ref.softmax(x)) < 2e-6
    assert sm._chunks(1, 5000, 128, rand(1), t)[0] > 1
