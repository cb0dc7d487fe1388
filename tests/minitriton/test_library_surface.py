"""What a real kernel library's test suite needs of minitriton standing in for `triton`
(issue 21 section 0, found by running Liger-Kernel's tests under `python -m minitriton -m
pytest`): the module tree as attributes, and the host helpers and language its kernels use.
The kernels here are the project's own."""
import importlib

import pytest

import minitriton

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
