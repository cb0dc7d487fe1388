"""tritonlab.kernels.elementwise on the active backend (minitriton here, Triton on a GPU)."""
import pytest
import torch
import torch.nn.functional as F

import torch_references as ref
from torch_references import DEV, DTYPES, ELEMENTWISE_TOLERANCES as TOLERANCES, rand
from tritonlab.kernels import elementwise as ew

SHAPES = [(1,), (1000,), (3, 333), (2, 5, 129), (4096,)]  # 1 lane; masked tail; any shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add(shape, dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=g).to(DEV, dtype)
    y = torch.randn(shape, generator=g).to(DEV, dtype)
    assert torch.equal(ew.add(x, y), x + y)  # one correctly rounded add, like torch


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op,reference", [(ew.gelu, ref.gelu),
                                          (ew.silu, lambda x: F.silu(x.double()))])
def test_activation(op, reference, shape, dtype):
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(2)) * 3).to(DEV, dtype)
    out = op(x)
    assert out.dtype == dtype and out.shape == x.shape
    want = reference(x)
    err = (out.double() - want).abs().max().item()
    assert err <= TOLERANCES[dtype] * max(1.0, want.abs().max().item())


def test_gelu_matches_lecture_figure():
    x = torch.randn(1 << 14, generator=torch.Generator().manual_seed(3)).to(DEV)
    diff = (ew.gelu(x) - F.gelu(x, approximate="tanh")).abs().max().item()
    assert diff < 2e-6


def test_non_contiguous_and_empty():
    x = rand(64, 48).t()
    assert not x.is_contiguous()
    assert torch.equal(ew.add(x, x), x + x)
    e = torch.empty(0, 5, device=DEV)
    assert ew.gelu(e).shape == (0, 5)


def test_bad_inputs():
    x = rand(8)
    with pytest.raises(ValueError, match="shapes differ"):
        ew.add(x, rand(9))
    with pytest.raises(TypeError, match="dtype"):
        ew.gelu(x.to(torch.int32))
    with pytest.raises(TypeError, match="dtypes differ"):
        ew.add(x, x.half())
    with pytest.raises(TypeError, match="torch.Tensor"):
        ew.gelu([1.0, 2.0])
    other = "meta"
    with pytest.raises(ValueError, match="backend of these kernels runs on"):
        ew.gelu(torch.zeros(8, device=other))
