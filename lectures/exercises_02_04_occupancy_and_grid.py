"""Exercises 2 and 4 of lecture 6, worked through tritonlab.hardware.

Exercise 2: a kernel with 256 threads per block, 96 registers per thread and 48 KB of shared
memory per block, on one H100 SM (65,536 registers, 228 KB shared memory, 2,048 threads, 32
blocks). How many blocks fit, what occupancy, what limits it?

Exercise 4: matmul_relu_kernel on (1000 x 512) @ (512 x 700) with 64 x 64 x 32 tiles: the grid,
and the iterations along K per program.
"""
from tritonlab import hardware as hw

occ = hw.occupancy(threads_per_block=256, registers_per_thread=96,
                   shared_bytes_per_block=48 * 1024, gpu="H100")
print("exercise 2:")
print(f"  registers: 65536 / (256 x 96) = {65536 / (256 * 96):.2f} -> {occ.limits['registers']} "
      f"blocks; shared memory: 228 KB / (48 + 1 reserved) KB -> {occ.limits['shared memory']}; "
      f"threads: 2048 / 256 = {occ.limits['threads']}")
print(f"  -> {occ}")
lecture = hw.occupancy(threads_per_block=128, registers_per_thread=160, gpu="H100")
print(f"  §1's example (128 threads, 160 registers): {lecture}")

g = hw.grid(1000, 700, 512, 64, 64, 32)
print("exercise 4:")
print(f"  (ceil(1000/64), ceil(700/64)) = {g.shape}: {g}")
print(f"  on an H100 with 1 block per SM: {hw.waves(g.programs, 1, 'H100')}")
print(f"  wave quantisation on a B200: {hw.waves(148, 1, 'B200')}; {hw.waves(149, 1, 'B200')}")
