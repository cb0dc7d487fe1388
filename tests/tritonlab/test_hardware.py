"""The hardware model: lecture §1 and exercises 2 and 4, waves, bank conflicts, roofline."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import minitriton
from tritonlab import backend
from tritonlab import hardware as hw
from tritonlab.cli import main


def test_exercise_2_and_the_lecture_example():
    occ = hw.occupancy(256, 96, 48 * 1024, "H100")
    assert (occ.blocks_per_sm, occ.active_warps, occ.occupancy, occ.limiter) == \
        (2, 16, 0.25, "registers")
    occ = hw.occupancy(128, 160, 0, "H100")
    assert (occ.blocks_per_sm, occ.active_warps, occ.limiter) == (3, 12, "registers")
    assert round(occ.occupancy * 100) == 19


@pytest.mark.parametrize("threads,regs,shared,blocks,limiter", [
    (1024, 16, 0, 2, "threads"),  # 2048 threads per SM
    (32, 16, 0, 32, "blocks"),  # tiny blocks hit the 32-blocks limit
    (128, 33, 0, 12, "registers"),  # 33 regs round up to 40 per thread: 5120 per block
    (256, 32, 100 * 1024, 2, "shared memory"),  # 228 KB / (100 + 1) KB
])
def test_occupancy_limits(threads, regs, shared, blocks, limiter):
    occ = hw.occupancy(threads, regs, shared, "H100")
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)


@pytest.mark.parametrize("blocks,per_sm,gpu,waves,tail,wasted", [
    (148, 1, "B200", 1, 0, 0.0), (149, 1, "B200", 2, 1, 147 / 296),
    (296, 1, "B200", 2, 0, 0.0), (132, 2, "H100", 1, 132, 0.5), (1, 1, "A100", 1, 1, 107 / 108),
])
def test_waves(blocks, per_sm, gpu, waves, tail, wasted):
    w = hw.waves(blocks, per_sm, gpu)
    assert (w.waves, w.tail_blocks) == (waves, tail)
    assert w.wasted == pytest.approx(wasted)


def test_exercise_4_grid():
    g = hw.grid(1000, 700, 512, 64, 64, 32)
    assert (g.shape, g.programs, g.iterations) == ((16, 11), 176, 16)


def test_bank_conflicts():
    assert hw.conflict_degree(hw.tile_column_read()) == 32
    assert hw.conflict_degree(hw.tile_column_read(padding=1)) == 1
    assert hw.conflict_degree(hw.tile_column_read(swizzle=True)) == 1
    assert hw.conflict_degree([0] * 32) == 1  # one word for everybody: a broadcast
    assert hw.conflict_degree([4 * i for i in range(32)]) == 1  # a row read


def test_specs_and_errors():
    assert hw.get("h100").sm_count == 132 and hw.get("B200").sm_count == 148
    assert hw.get("A100").flops("bf16") == 312e12
    with pytest.raises(ValueError, match="unknown GPU"):
        hw.get("TPU")
    with pytest.raises(ValueError, match="registers per thread"):
        hw.occupancy(128, 300, 0, "H100")


def test_roofline_from_simulated_traffic():
    sim = backend.with_backend("tritonlab.kernels.elementwise", "sim")
    x = torch.randn(1 << 16, generator=torch.Generator().manual_seed(0))
    with minitriton.configure(footprint=True), minitriton.record() as rec:
        sim.add(x, x)
    r = hw.roofline(rec[0], "H100", "fp32")
    assert r.bytes_total == 3 * 4 * (1 << 16) and r.bytes_unique == r.bytes_total
    assert r.bound == "memory" and r.flops == 0
    assert r.predicted[0] == pytest.approx(r.bytes_total / 3.35e12)
    mm = backend.with_backend("tritonlab.kernels.matmul", "sim")
    a = torch.randn(256, 256, generator=torch.Generator().manual_seed(1))
    with minitriton.configure(footprint=True), minitriton.record() as rec:
        mm.matmul_relu_lecture(a, a, 32, 32, 32)
    r = hw.roofline(rec[0], "H100", "tf32")
    assert r.bytes_unique == 3 * 256 * 256 * 4 < r.bytes_total  # re-reads come from cache
    assert r.flops == 2 * 256 ** 3 and r.predicted[0] < r.predicted[1]


def test_cli(capsys):
    assert main(["occupancy", "--threads", "256", "--registers", "96", "--shared", "49152"]) == 0
    assert "2 blocks/SM, 16 warps, occupancy 25%" in capsys.readouterr().out
    assert main(["waves", "--blocks", "149", "--gpu", "B200"]) == 0
    assert "tail of 1" in capsys.readouterr().out
    assert main(["roofline", "softmax", "--shape", "64x100", "--gpu", "H200"]) == 0
    assert "memory-bound" in capsys.readouterr().out


def test_exercises_script_runs():
    script = Path(__file__).resolve().parents[2] / "lectures" / "exercises_02_04_occupancy_and_grid.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True).stdout
    assert "2 blocks/SM, 16 warps, occupancy 25%" in out and "176 programs" in out
