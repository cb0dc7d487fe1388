"""`tritonlab info`: which backend runs the kernels, with which versions."""
from __future__ import annotations

import numpy

from .lecture import available_lectures
from .options import UserError, backend_problem


def run_info(args):
    import torch

    problem = backend_problem()  # TRITONLAB_BACKEND asks for what cannot run here
    if problem:
        raise UserError(problem)
    from .. import backend  # imports torch and triton or minitriton
    print(f"backend : {backend.NAME} ({backend.describe()})")
    print(f"device  : {backend.DEVICE}")
    print(f"torch   : {torch.__version__}, numpy {numpy.__version__}")
    print(f"lectures: {', '.join(available_lectures()) or 'none found'}")
    return 0


def register(subparsers):
    p = subparsers.add_parser("info", help="say which backend and versions are in use")
    p.set_defaults(func=run_info)
