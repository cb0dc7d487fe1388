"""The uninitialized-read report (`Settings(uninitialized=...)`) speaks of the program it names:
how many elements that program read unwritten and where, the same under both executors."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import Settings, UninitializedReadError


@triton.jit
def double_in_place(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)  # the bug: reads its output, never written
    tl.store(y_ptr + offs, y * 2, mask=mask)


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
def test_the_count_is_the_named_programs(executor):
    # 100 elements, blocks of 64: program 0 reads 64 of them, program 1 the other 36
    x, y = np.ones(100, np.float32), np.zeros(100, np.float32)
    with pytest.raises(UninitializedReadError) as e:
        double_in_place[(2,)](x, y, 100, BLOCK=64, minitriton_settings=Settings(
            executor=executor, uninitialized=("y_ptr",)))
    assert "program (0, 0, 0)" in str(e.value)
    assert "reads 64 element(s)" in str(e.value)
    assert "offsets [0, 1, 2, 3, 4, 5, 6, 7]" in str(e.value)
