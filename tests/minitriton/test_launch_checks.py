"""Launches that Triton on a GPU refuses are refused, saying what to write instead
(runtime/launch.py): a grid that is not a tuple, and, where minitriton stands in for `triton`
(the runner, install_as_triton), a NumPy array beside torch tensors. minitriton imported as
itself keeps its NumPy path, and so does a program that passes NumPy arrays alone."""
import textwrap

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import LaunchError, runner


@triton.jit
def fill(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs, mask=offs < n)


@triton.jit
def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


# ----- the grid: Triton takes len(grid), so a single number is a TypeError on the GPU

@pytest.mark.parametrize("grid", [1, np.int64(2), np.array(3)])
def test_a_number_as_the_grid_is_refused_with_the_tuple_to_write(grid):
    out = np.zeros(64, np.int32)
    with pytest.raises(LaunchError, match=r"not a tuple") as info:
        fill[grid](out, 64, BLOCK=64)
    assert isinstance(info.value, TypeError)  # as Triton's "has no len()"
    assert f"fill[({grid!r},)](...)" in str(info.value)
    assert not out.any()  # nothing ran


def test_a_grid_function_returning_a_number_is_refused():
    out = np.zeros(100, np.int32)
    with pytest.raises(LaunchError, match=r"grid function returned 4 \(int\), not a tuple"):
        fill[lambda meta: triton.cdiv(meta["n"], meta["BLOCK"])](out, 100, BLOCK=32)


@pytest.mark.parametrize("grid", [(4,), [4], (4, 1), (np.int64(4), 1, 1),
                                  lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)])
def test_tuples_lists_and_grid_functions_still_launch(grid):
    out = np.zeros(100, np.int32)
    fill[grid](out, 100, BLOCK=32)
    assert out.tolist() == list(range(100))


# ----- NumPy arrays: minitriton's own path, a GPU's refusal where the program is Triton's

def test_numpy_arrays_are_minitritons_own_path():
    x, out = np.arange(50, dtype=np.float32), np.zeros(50, np.float32)
    copy[(2,)](x, out, 50, BLOCK=32)
    assert np.array_equal(out, x)


def test_numpy_beside_torch_is_fine_with_minitriton_imported_as_itself():
    torch = pytest.importorskip("torch")
    x, out = torch.arange(50, dtype=torch.float32), np.zeros(50, np.float32)
    copy[(2,)](x, out, 50, BLOCK=32)
    assert np.array_equal(out, x.numpy())


def test_numpy_beside_torch_is_refused_where_minitriton_stands_in_for_triton():
    torch = pytest.importorskip("torch")
    x, out = torch.arange(50, dtype=torch.float32), np.zeros(50, np.float32)
    with triton.install_as_triton():
        with pytest.raises(LaunchError) as info:
            copy[(2,)](x, out, 50, BLOCK=32)
        message = str(info.value)
        assert "`out_ptr` is a NumPy array, beside torch tensors (`x_ptr`)" in message
        assert "failed to specialize argument of type: numpy.ndarray" in message
        assert "torch.from_numpy(a).to(DEVICE)" in message
        assert not out.any()
        copy[(2,)](x.numpy(), out, 50, BLOCK=32)  # NumPy alone: a NumPy program, not a GPU's
        assert np.array_equal(out, x.numpy())
    copy[(2,)](x, out, 50, BLOCK=32)  # uninstalled: minitriton's own path again


MIXED = """
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, x * 2, mask=offs < n)

    x = torch.rand(100)
    out = np.empty(100, np.float32)  # the mistake: host memory for the output
    double[(4,)](x, out, 100, BLOCK=32)
"""


def test_the_runner_refuses_numpy_beside_torch(tmp_path, capsys):
    pytest.importorskip("torch")
    (tmp_path / "script.py").write_text(textwrap.dedent(MIXED))
    assert runner.run(str(tmp_path / "script.py"), []) == 1
    err = capsys.readouterr().err
    assert "LaunchError: kernel `double`: `out_ptr` is a NumPy array" in err
    assert 'script.py", line 15, in <module>' in err
