"""tritonlab: the CS336 lecture-6 kernels, run by real Triton on a GPU or by minitriton anywhere.

`tritonlab.backend` picks the implementation; `tritonlab.kernels` holds the kernels with their
launch functions; `python -m tritonlab` (or `tritonlab`) is the command line.
"""
__version__ = "0.1.0"
