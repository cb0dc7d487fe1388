"""The `tritonlab` command line: one module per subcommand (or small family), each with a
`register(subparsers)` that builds its parser next to its handler.

Handlers import torch and the modules that load torch or NumPy (tritonlab's backend, bench,
profile, compilation; minitriton) when they run, so that `tritonlab --help` and the hardware
model's commands answer in a fraction of a second instead of the seconds torch takes to load.
"""
from __future__ import annotations

import argparse
import sys

from . import bench, compile_report, hardware, info, lecture, viz
from .options import Parser, UserError, backend_problem

DESCRIPTION = """\
tritonlab: learn, check and measure Triton kernels (CS336 lecture 6).

Kernels run on real Triton when a CUDA GPU and triton are present, else on minitriton, the
NumPy simulator (override with TRITONLAB_BACKEND=triton|sim|interpret)."""

SUBCOMMANDS = (lecture, info, bench, compile_report, hardware, viz)  # in the order --help lists them


def build_parser():
    parser = Parser(prog="tritonlab", description=DESCRIPTION,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv=None):
    """Run the command line; returns the exit code (2 for a user error, printed as one line)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except UserError as e:
        message = str(e)
    except ModuleNotFoundError as e:
        # TRITONLAB_BACKEND=triton or interpret without triton: tritonlab.backend's import
        # fails wherever a command (or a lecture, or the user's module) first imports it
        message = backend_problem() if (e.name or "").split(".")[0] == "triton" else None
        if message is None:
            raise
    print(f"tritonlab {args.command}: error: {message}", file=sys.stderr)
    return 2
