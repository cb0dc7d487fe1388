"""Start-up: `import minitriton` leaves ml_dtypes (about 1 s to load) for the first bf16 or fp8
use, and bf16/fp8 are still exact once it loads. The time itself is benchmarks/import_time.py's."""
import subprocess
import sys

PROBE = """
import sys
import minitriton, minitriton.language as tl
assert "ml_dtypes" not in sys.modules, "import minitriton loaded ml_dtypes"
import numpy as np
assert tl.float32.np == np.float32 and tl.float16.np == np.float16
assert "ml_dtypes" not in sys.modules, "a numpy-native type loaded ml_dtypes"
print(tl.bfloat16.np, "ml_dtypes" in sys.modules)
"""

# the first bf16/fp8 use happens inside a kernel (the cast), then a bf16 array is an argument;
# both bit-exact against ml_dtypes' own conversions
KERNELS = """
import sys
import numpy as np
import minitriton as triton
import minitriton.language as tl

@triton.jit
def cast(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    tl.store(y_ptr + o, x.to(tl.bfloat16).to(tl.float32))
    tl.store(z_ptr + o, x.to(tl.float8e4nv).to(tl.float32))

@triton.jit
def copy(x_ptr, y_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y_ptr + o, tl.load(x_ptr + o))

x = np.array([1.0, 1 / 3, 300.5, -2.7e-3, 7.0, 1e30, 0.0, -1.0], np.float32)
y, z = np.zeros(8, np.float32), np.zeros(8, np.float32)
assert "ml_dtypes" not in sys.modules
cast[(1,)](x, y, z, N=8)
import ml_dtypes
assert np.array_equal(y, x.astype(ml_dtypes.bfloat16).astype(np.float32))
assert np.array_equal(z, x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32), equal_nan=True)
b = x.astype(ml_dtypes.bfloat16)
c = np.zeros(8, ml_dtypes.bfloat16)
copy[(1,)](b, c, N=8)
assert (c.view(np.uint16) == b.view(np.uint16)).all()
print("ok")
"""


def run(code, tmp_path):
    script = tmp_path / "probe.py"  # a file: @jit reads kernel source from one
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=False)


def test_import_does_not_load_ml_dtypes(tmp_path):
    done = run(PROBE, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["bfloat16", "True"]  # asking for bf16 loads it


def test_bf16_and_fp8_exact_after_the_lazy_import(tmp_path):
    done = run(KERNELS, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
