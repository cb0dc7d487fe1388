"""minitriton standing in for `triton` (standin/modules.py, `minitriton.install_as_triton()`):
the version libraries check, every module path of Triton 3.6's public API, the names they
import, `triton.reinterpret`, and the error for what minitriton lacks."""
import importlib
import sys

import numpy as np
import pytest

import minitriton
import minitriton.language as tl

# Triton 3.6.0's modules (the wheel's python files, without the private `_`-modules but
# runtime._allocation, without experimental/gluon, profiler and the AMD backend)
TRITON_36_MODULES = """
triton triton.backends triton.backends.compiler triton.backends.driver triton.backends.nvidia
triton.backends.nvidia.compiler triton.backends.nvidia.driver triton.compiler
triton.compiler.code_generator triton.compiler.compiler triton.compiler.errors
triton.compiler.make_launcher triton.errors triton.knobs triton.language triton.language.core
triton.language.extra triton.language.extra.cuda triton.language.extra.cuda.gdc
triton.language.extra.cuda.libdevice triton.language.extra.cuda.utils triton.language.extra.hip
triton.language.extra.hip.libdevice triton.language.extra.hip.utils
triton.language.extra.libdevice triton.language.math triton.language.random
triton.language.semantic triton.language.standard triton.language.target_info triton.runtime
triton.runtime._allocation triton.runtime._async_compile triton.runtime.autotuner
triton.runtime.build triton.runtime.cache triton.runtime.driver triton.runtime.errors
triton.runtime.interpreter triton.runtime.jit triton.testing triton.tools
triton.tools.build_extern triton.tools.compile triton.tools.disasm triton.tools.link
triton.tools.mxfp triton.tools.ragged_tma triton.tools.tensor_descriptor
""".split()


@pytest.fixture
def triton():
    with minitriton.install_as_triton() as module:
        yield module


def test_every_public_module_of_triton_3_6_imports(triton):
    for name in TRITON_36_MODULES:
        assert importlib.import_module(name).__name__, name


def test_version_is_the_emulated_release_and_configurable():
    with minitriton.install_as_triton() as triton:
        assert triton.__version__ == "3.6.0"
        assert sys.modules["triton"] is triton
    assert "triton" not in sys.modules
    with minitriton.install_as_triton(triton_version="3.4.0") as triton:
        assert triton.__version__ == "3.4.0"
    assert minitriton.__version__ == "0.1.0"
    handle = minitriton.install_as_triton()
    try:
        import triton as t  # noqa: F401
        assert t.__version__ == "3.6.0"
    finally:
        handle.uninstall()
    assert "triton" not in sys.modules


def test_what_libraries_import(triton):
    # the import lines of kernel libraries, taken as written
    from triton.language.math import rsqrt  # noqa: F401
    from triton.language.extra.libdevice import erf, isfinited, pow, tanh  # noqa: F401
    from triton.language.extra.cuda.libdevice import tanh as cuda_tanh
    from triton.runtime.cache import FileCacheManager  # noqa: F401
    from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: F401
    from triton.runtime.jit import JITFunction  # noqa: F401
    from triton.runtime.autotuner import Autotuner  # noqa: F401
    from triton.language.extra import libdevice
    import triton.language as tl_
    assert tl_ is tl and tl_.extra.libdevice is libdevice and cuda_tanh is libdevice.tanh
    assert triton.reinterpret is minitriton.reinterpret
    assert importlib.import_module("triton.language.standard").cdiv is tl.cdiv


def test_triton_2_math_module_holds_libdevice():
    with minitriton.install_as_triton(triton_version="2.1.0"):
        from triton.language.math import rsqrt, tanh  # noqa: F401  the pre-3.0 import path
        from minitriton.language.extra import libdevice
        assert tanh is libdevice.tanh


def test_target_info_on_the_emulated_gpu():
    with minitriton.install_as_triton(gpu="H100"):
        from triton.language.target_info import cuda_capability_geq, is_cuda, is_hip
        assert is_cuda() and not is_hip()
        assert cuda_capability_geq(9, 0) and not cuda_capability_geq(10)

        @minitriton.jit
        def k(out):  # a constexpr function of Triton's, called in a kernel
            if cuda_capability_geq(9, 0):
                tl.store(out, 1)
            else:
                tl.store(out, 2)
        out = np.zeros(1, np.int32)
        k[(1,)](out)
        assert out[0] == 1


def test_missing_names_point_to_the_limitations(triton):
    with pytest.raises(ImportError, match="docs/limitations.md"):
        from triton.language.extra.libdevice import j0  # noqa: F401
    with pytest.raises(ImportError, match="docs/limitations.md"):
        from triton.compiler.compiler import ASTSource  # noqa: F401
    with pytest.raises(ModuleNotFoundError, match="docs/limitations.md"):
        import triton.no_such_module  # noqa: F401
    with pytest.raises(ImportError, match="extra.libdevice import tanh"):
        from triton.language.math import tanh  # noqa: F401  not in Triton 3's math either
    assert not hasattr(triton.language.extra.libdevice, "j0")  # probes still answer False
    with pytest.raises(AttributeError, match="triton.knobs.nothing.*limitations"):
        triton.knobs.nothing  # noqa: B018


def test_reinterpret_is_a_typed_view_of_the_bytes():
    raw = np.array([0x38, 0x40, 0xC4, 0x7E], np.uint8)  # e4m3: 1, 2, -3, 448
    wrapped = minitriton.reinterpret(raw, tl.float8e4nv)
    assert isinstance(wrapped, minitriton.TensorWrapper)
    assert wrapped.dtype is tl.float8e4nv and wrapped.shape == (4,)
    assert wrapped.data_ptr() == raw.__array_interface__["data"][0]
    assert wrapped.stride() == (1,) and wrapped.element_size() == 1
    np.testing.assert_array_equal(wrapped.view_as_numpy().astype(np.float32), [1, 2, -3, 448])
    again = minitriton.reinterpret(wrapped, tl.float8e5)
    assert again.base is raw and again.dtype is tl.float8e5
    with pytest.raises(TypeError, match="Cannot reinterpret"):
        minitriton.reinterpret([1, 2], tl.float8e4nv)


def test_reinterpret_a_torch_tensor():
    torch = pytest.importorskip("torch")
    raw = torch.tensor([0x38, 0x40], dtype=torch.uint8)
    wrapped = minitriton.reinterpret(raw, tl.float8e4nv)
    assert wrapped.data_ptr() == raw.data_ptr() and wrapped.stride(0) == 1
    assert minitriton.reinterpret(wrapped, torch.uint8) is raw
    assert wrapped.view_as_numpy().astype(np.float32).tolist() == [1.0, 2.0]
