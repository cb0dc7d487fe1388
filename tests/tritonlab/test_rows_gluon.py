"""The row-resident Gluon forwards (kernels/rows_gluon.py: softmax and RMSNorm with each row
held in shared memory, chunks of later rows streaming in by TMA) against float64 on the active
backend (minitriton's Gluon here, real Triton's on a Hopper GPU), under both executors and the
sanitizers, and which inputs they refuse."""
import pytest
import torch

import minitriton
from torch_references import DEV, TOLERANCES, rand, rel_err
from tritonlab.kernels import rows_gluon as rg

SIM = DEV == "cpu"


def _softmax_ref(x):
    return torch.softmax(x.double(), -1)


def _rmsnorm_ref(x, g, eps):
    r = (x.double().pow(2).mean(-1) + eps).rsqrt()
    return x.double() * r[..., None] * g.double(), r


def _run(op, x, **kw):
    y = torch.empty_like(x)
    if op == "softmax":
        return rg.forward("softmax", x, y, **kw), None
    g = rand(x.shape[-1], dtype=x.dtype, seed=1)
    rstd = torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)
    rg.forward("rmsnorm", x, y, g=g, rstd=rstd, eps=1e-6, **kw)
    want, r = _rmsnorm_ref(x, g, 1e-6)
    return y, (want, rstd, r)


def _check(op, x, y, extra):
    if op == "softmax":
        want = _softmax_ref(x)
    else:
        want, rstd, r = extra
        torch.testing.assert_close(rstd.double(), r, rtol=2e-6, atol=0)
    assert y.dtype == x.dtype and y.shape == x.shape
    assert rel_err(y, want) < TOLERANCES[x.dtype] * 4


@pytest.mark.skipif(not SIM, reason="the simulator's small boxes")
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", rg.OPS)
@pytest.mark.parametrize("shape,slots,pieces", [
    ((7, 2048), 3, 1),   # 2 chunks a row, one ahead; 7 rows on 2 programs: 4 and 3 rows each
    ((5, 4096), 6, 1),   # 4 chunks, two ahead
    ((3, 1024), 1, 1),   # one chunk a row, a ring of one: the next row only after this one
    ((2, 3, 2048), 2, 1),  # leading dimensions; a ring the size of a row
    ((7, 4096), 2, 2),   # two pieces a row meeting in memory, 2 groups: 4 and 3 rows each
    ((5, 8192), 3, 4),   # four pieces of 2 chunks, one ahead
    ((1, 4096), 1, 4),   # one row: one group of four programs, one chunk each
])
def test_rows_resident_against_float64(shape, slots, pieces, op, dtype, monkeypatch):
    x = rand(*shape, dtype=dtype, scale=3)
    counters = _spy_counters(monkeypatch)
    y, extra = _run(op, x, box_rows=4, slots=slots, warps=4, pieces=pieces)
    _check(op, x, y, extra)
    # the meeting's counters (reused per stream on a GPU, zero before each launch) left zero
    assert len(counters) == 1 and not counters[0].any()


def _spy_counters(monkeypatch):
    """The counters each launch is given (kernels/_exchange.py's `counted`), as it left them."""
    seen, real = [], rg.exchange.counted

    def counted(name, count, device, run):
        return real(name, count, device, lambda sync: (seen.append(sync), run(sync))[1])
    monkeypatch.setattr(rg.exchange, "counted", counted)
    return seen


@pytest.mark.skipif(not SIM, reason="the simulator's sanitizers")
def test_rows_resident_reports_nothing_and_softmax_keeps_minus_infinity():
    """Bounds, padding and the race sanitizer find nothing (the ring's slots and the output
    buffers reused across rows, the pieces' statistics shared through memory); -inf entries
    get 0, a row of -inf NaN, as torch.softmax."""
    x = rand(5, 2048, dtype=torch.bfloat16, scale=3)
    x[1, 7] = x[1, 1500] = float("-inf")
    x[3] = float("-inf")
    want = _softmax_ref(x)
    keep = torch.tensor([0, 1, 2, 4])
    for pieces in (1, 2):  # whole rows; two pieces a row meeting in memory
        with minitriton.configure(races=True, order=True, padding=True):
            y, _ = _run("softmax", x, box_rows=4, slots=3, warps=4, pieces=pieces)
            _run("rmsnorm", x[:3].nan_to_num(neginf=-5.0), box_rows=4, slots=3, warps=4,
                 pieces=pieces)
        assert y[1, 7] == 0 and y[1, 1500] == 0 and torch.isnan(y[3]).all()
        assert rel_err(y[keep], want[keep]) < TOLERANCES[torch.bfloat16] * 4


@pytest.mark.skipif(not SIM, reason="the simulator")
def test_rows_resident_at_the_gpus_boxes():
    # a 65536-wide bf16 row as the GPU runs it: 8 chunks of (32, 256), a ring of 12, 8 warps
    x = rand(3, 65536, dtype=torch.bfloat16, scale=2)
    for op in rg.OPS:
        y, extra = _run(op, x, box_rows=32, slots=12, warps=8)
        _check(op, x, y, extra)


def test_rows_resident_refuses_what_it_cannot_take():
    x = rand(4, 2048)
    y = torch.empty_like(x)
    with pytest.raises(ValueError, match="2 chunks, more than the ring's 1 slots"):
        rg.forward("softmax", x, y, box_rows=4, slots=1)
    with pytest.raises(ValueError, match="not a multiple of 768"):
        rg.forward("softmax", x, y, box_rows=3, slots=4)
    with pytest.raises(ValueError, match="more than a program may take"):
        rg.forward("softmax", x, y, box_rows=8, slots=40)  # 42 buffers of 8 KiB
    with pytest.raises(ValueError, match="3 pieces a row"):
        rg.forward("softmax", x, y, box_rows=2, slots=4, pieces=3)
    with pytest.raises(ValueError, match="not a multiple of 4096 .4 pieces"):
        rg.forward("softmax", x, y, box_rows=4, slots=4, pieces=4)
    with pytest.raises(ValueError, match="non-contiguous"):
        rg.forward("softmax", x.t(), torch.empty_like(x.t()), box_rows=4, slots=4)
    with pytest.raises(ValueError, match="int32"):
        rg.forward("softmax", x.int(), y.int(), box_rows=4, slots=4)
    with pytest.raises(ValueError, match="not a contiguous tensor of x's shape"):
        rg.forward("softmax", x, y[:, :1024], box_rows=4, slots=4)
    with pytest.raises(ValueError, match="needs g and rstd"):
        rg.forward("rmsnorm", x, y, box_rows=4, slots=4)
    rstd = torch.empty(4, device=DEV)
    with pytest.raises(ValueError, match="g is not a contiguous vector of 2048"):
        rg.forward("rmsnorm", x, y, g=rand(1024), rstd=rstd, box_rows=4, slots=4)
    with pytest.raises(ValueError, match="rstd does not hold 4 fp32 values"):
        rg.forward("rmsnorm", x, y, g=rand(2048), rstd=rstd[:3], box_rows=4, slots=4)
    with pytest.raises(ValueError, match="no columns"):
        rg.forward("softmax", rand(4, 0), rand(4, 0), box_rows=4, slots=4)
    with pytest.raises(ValueError, match="an output TMA cannot address"):
        rg.forward("softmax", rand(4, 1024), torch.empty(4 * 1024 + 1, device=DEV)[1:].view(
            4, 1024), box_rows=4, slots=4)
    with pytest.raises(ValueError, match="not one of"):
        rg.forward("layernorm", x, y, box_rows=4, slots=4)


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="TMA and the shared memory of Hopper")
@pytest.mark.parametrize("op", rg.OPS)
@pytest.mark.parametrize("dtype,shape,box,slots,pieces", [
    (torch.bfloat16, (300, 65536), 32, 12, 1),  # whole rows: 8 chunks of 32 x 256, 4 ahead
    (torch.float32, (300, 32768), 16, 10, 1),   # the same 128 KiB in fp32
    (torch.float32, (300, 65536), 16, 12, 2),   # two pieces a row meeting in memory
    (torch.bfloat16, (64, 262144), 32, 12, 4),  # four: fewer rows than groups of programs
])
def test_gpu_rows_resident(op, dtype, shape, box, slots, pieces, monkeypatch):
    # more rows than SMs (programs walk several) where there are 300
    x = rand(*shape, dtype=dtype, scale=3)
    counters = _spy_counters(monkeypatch)
    y, extra = _run(op, x, box_rows=box, slots=slots, warps=8, pieces=pieces)
    _check(op, x, y, extra)
    assert not counters[0].any()
