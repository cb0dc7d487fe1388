"""What a real kernel library's test suite needs of minitriton standing in for `triton`
(issue 21 section 0, found by running Liger-Kernel's tests under `python -m minitriton -m
pytest`): the module tree as attributes, and the host helpers and language its kernels use.
The kernels here are the project's own."""
import importlib

import numpy as np
import pytest

import minitriton
import minitriton.language as tl

from tests.minitriton.test_module_surface import TRITON_36_MODULES


@pytest.fixture
def triton():
    with minitriton.install_as_triton() as module:
        yield module


def test_every_module_is_an_attribute_of_its_parent(triton):
    """`import triton.compiler.compiler` then `triton.compiler.compiler.X`, as torch's inductor
    does on import (torch/_inductor/runtime/hints.py): the import system binds only `triton`
    when the submodule is already in sys.modules, so the stand-ins are linked to their parents."""
    for name in TRITON_36_MODULES:
        module = importlib.import_module(name)
        if name == "triton.runtime.driver":  # as in Triton, the attribute is the DriverConfig
            assert triton.runtime.driver is module.driver
            continue
        walked = triton
        for part in name.split(".")[1:]:
            walked = getattr(walked, part)
        assert walked is module, name
    assert not hasattr(triton.compiler.compiler, "AttrsDescriptor")
    assert not hasattr(triton.backends.compiler, "AttrsDescriptor")


def test_linking_leaves_minitriton_language_as_it_was():
    before = set(vars(minitriton.language))
    with minitriton.install_as_triton() as triton:
        assert triton.language.semantic.__name__ == "triton.language.semantic"
        assert triton.language is minitriton.language
    assert set(vars(minitriton.language)) == before


@minitriton.jit
def _members(x, y, counter, idx, BLOCK: tl.constexpr):
    """Tensor methods Triton attaches with `_tensor_member_fn`: cast, cdiv, ravel, sort, store,
    atomic_*."""
    pid = tl.program_id(0).cast(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + pid * BLOCK + offs)
    (y + pid * BLOCK + offs).store(v.sort(descending=True).cast(tl.float16).to(tl.float32))
    counter.atomic_add(1)
    cell = tl.reshape(offs, (2, BLOCK // 2)).ravel()
    (idx + pid * BLOCK + offs).store(cell.cdiv(2).cast(tl.int32))
    counter.atomic_max(0)


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
def test_tensor_member_functions(executor):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(2 * 8).astype(np.float32)
    y = np.zeros_like(x)
    counter = np.zeros(1, np.int32)
    idx = np.zeros(16, np.int32)
    with minitriton.configure(executor=executor):
        _members[(2,)](x, y, counter, idx, BLOCK=8)
    want = -np.sort(-x.reshape(2, 8), axis=1)
    np.testing.assert_array_equal(y.reshape(2, 8), want.astype(np.float16).astype(np.float32))
    assert counter[0] == 2
    np.testing.assert_array_equal(idx, np.tile((np.arange(8) + 1) // 2, 2))


def test_members_are_the_language_functions():
    assert tl.tensor.cast is tl.cast and tl.tensor.store is tl.store
    assert tl.tensor.atomic_cas is tl.atomic_cas and tl.tensor.atomic_add is tl.atomic_add
