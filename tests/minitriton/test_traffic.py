"""Traffic counting: the lecture's figures come out of the counter (the lecture's add and
matmul+relu kernels, from the corpus)."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
import references as ref
from corpus import load

pytestmark = pytest.mark.usefixtures("executor")  # both executors must count the same
corpus = load(triton, tl)


def test_add_1000_block_256():
    x, y, out = ref.rand(1000), ref.rand(1000, seed=1), np.empty(1000, np.float32)
    rec = corpus.add_kernel[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)
    assert rec.num_programs == 4 and rec.grid == (4,)
    assert rec.elements_read == 2000 and rec.elements_written == 1000
    assert rec.bytes_read == 8000 and rec.bytes_written == 4000
    assert rec.args["x_ptr"].loaded == 1000 and rec.args["out_ptr"].stored == 1000
    assert rec.constexprs == {"BLOCK": 256}


@pytest.mark.parametrize("block,programs,read", [(16, 256, 2_097_152), (32, 64, 1_048_576),
                                                 (64, 16, 524_288), (128, 4, 262_144)])
def test_lecture_matmul_read_table(block, programs, read):
    n = 256
    a, b, c = ref.rand((n, n)), ref.rand((n, n), seed=1), np.empty((n, n), np.float32)
    with triton.record() as rec:
        corpus.matmul_kernel[(n // block, n // block)](a, b, c, n, n, n, n, 1, n, 1, n, 1,
                                                       BM=block, BN=block, BK=16, IEEE=False)
    (launch,) = rec
    assert launch.num_programs == programs
    assert launch.elements_read == read and launch.elements_written == n * n
    assert launch.dot_flops == 2 * n ** 3


def test_record_collects_every_launch_and_nests():
    x = ref.rand(100)
    with triton.record() as outer:
        corpus.add_kernel[(1,)](x, x, x.copy(), 100, BLOCK=128)
        with triton.record() as inner:
            corpus.add_kernel[(2,)](x, x, x.copy(), 100, BLOCK=64)
    assert len(outer) == 2 and len(inner) == 1
    assert outer.elements_read == 400 and inner[0].num_programs == 2
    assert "add_kernel" in outer.table()
