"""`JITFunction.warmup` returns a compiled kernel with Triton's metadata and resource estimates
(runtime/compiled.py) and launches nothing; `compiled[grid](*args)` launches it; Triton's
launch options are accepted and recorded; `set_allocator` keeps its allocator; float8 tensors
bind (memory.py)."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton.runtime.allocation import get_allocator, set_allocator


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


@triton.jit
def tile_dot(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])  # read BM*BK
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])  # read BK*BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))  # write BM*BN


@triton.jit
def row_max(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.program_id(0), tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


def test_reductions_estimate_the_warps_exchange_in_shared_memory():
    """Triton's softmax tutorial divides the SM's shared memory by `metadata.shared`: a kernel
    that reduces across warps needs some, so it is never 0 there."""
    compiled = row_max.warmup(np.ones(256, np.float32), np.zeros(1, np.float32), BLOCK=256,
                              grid=(1,), num_warps=8)
    assert compiled.metadata.shared == 8 * 1 * 4


def test_warmup_compiles_without_launching_and_the_result_launches():
    x = np.zeros(100, np.float32)
    compiled = add_one.warmup(x, 100, BLOCK=64, grid=(2,), num_warps=2)
    assert (x == 0).all()  # the first program ran, its writes undone
    assert compiled.name == "add_one" and compiled.metadata.num_warps == 2
    assert compiled.metadata.num_stages == 3 and compiled.metadata.shared == 0
    # 64 elements over 64 threads: 24 + 3 registers, rounded up to 32
    assert (compiled.n_regs, compiled.n_spills) == (32, 0)
    rec = compiled[(2,)](x, 100, 64)
    assert (x == 1).all() and rec.options["num_warps"] == 2


def test_dot_estimates_shared_memory_from_the_tiles_and_stages():
    a, b = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    compiled = tile_dot.warmup(a, b, c, 64, 64, 32, grid=(1,), num_stages=2)
    assert compiled.shared == 2 * (64 * 32 + 32 * 64) * 2
    # 24 + accumulator 64*64/128 = 32 + operands (2*2048*2 bytes)/4/128 = 16
    assert compiled.n_regs == 72 and compiled.n_spills == 0
    capped = tile_dot.warmup(a, b, c, 64, 64, 32, grid=(1,), maxnreg=64)
    assert (capped.n_regs, capped.n_spills) == (64, 8)
    # Triton 3.6 on an H100 gives 128x256 fp32 accumulators on 4 warps 255 registers and
    # spills (docs/results/config-sweep-h100-2026-12-05.csv); the estimate spills too
    a, b = np.ones((128, 64), np.float16), np.ones((64, 256), np.float16)
    big = tile_dot.warmup(a, b, np.zeros((128, 256), np.float32), 128, 256, 64, grid=(1,))
    assert big.n_regs == 255 and big.n_spills > 0


def test_triton_launch_options_are_accepted_and_recorded():
    x = np.zeros(8, np.float32)
    rec = add_one[(1,)](x, 8, BLOCK=8, launch_cooperative_grid=False, launch_pdl=True,
                        num_ctas=1, maxnreg=128, enable_fp_fusion=False, extern_libs=None,
                        instrumentation_mode="", clc=None)
    assert rec.options["launch_pdl"] is True and rec.options["maxnreg"] == 128
    assert "clc" in rec.options and (x == 1).all()


def test_set_allocator_keeps_the_allocator():
    def alloc(size, alignment, stream):
        return np.empty(size, np.int8)
    set_allocator(alloc)
    assert get_allocator() is alloc
    set_allocator(None)
    with pytest.raises(TypeError, match="callable"):
        set_allocator(42)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_numpy_arguments_bind(name):
    # ml_dtypes' float8_e5m2 has the array-interface type string '<f1' NumPy cannot read back
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.0, -2.0, 0.5, 3.0], getattr(ml_dtypes, name))
    y = np.zeros(4, np.float32)
    copy_to_fp32[(1,)](x, y, 4)
    np.testing.assert_array_equal(y, x.astype(np.float32))


def test_float8_e5m2_torch_tensor_binds():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, -2.0, 0.5, 57344.0]).to(torch.float8_e5m2)
    y = np.zeros(4, np.float32)
    copy_to_fp32[(1,)](x, y, 4)
    np.testing.assert_array_equal(y, x.float().numpy())


@triton.jit
def copy_to_fp32(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def test_jit_repr_names_the_compiled_kernel_from_its_specialization():
    """`@triton.jit(repr=fn)`: fn gets the launch's signature (type strings) and constants
    (constexprs, and ints equal to 1, which Triton specialises)."""
    seen = []

    def name(spec):
        seen.append((dict(spec.signature), dict(spec.constants)))
        return f"k_{spec.signature['v']}_{'_'.join(k for k, c in spec.constants.items() if c == 1)}"

    @triton.jit(repr=name)
    def k(v, one, X, B: tl.constexpr):
        pass

    x = np.zeros(4, np.float32)
    for value, ty in ((-1, "i32"), (2**31, "i64"), (2**63, "u64"), (2.5, "fp32")):
        assert k.warmup(value, 1, x, B=4, grid=(1,)).name == f"k_{ty}_one"
    assert seen[0] == ({"v": "i32", "one": "constexpr", "X": "*fp32", "B": "constexpr"},
                       {"one": 1, "B": 4})


def test_an_integer_argument_beyond_64_bits_overflows_at_launch():
    @triton.jit
    def k(v, X):
        pass

    x = np.zeros(4, np.float32)
    k[(1,)](2**64 - 1, x)
    k[(1,)](-2**63, x)
    for bad in (2**64, -2**63 - 1):
        with pytest.raises(OverflowError, match="64 bits"):
            k[(1,)](bad, x)
