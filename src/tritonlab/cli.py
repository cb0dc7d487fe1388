"""The `tritonlab` command line."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

DESCRIPTION = """\
tritonlab: learn, check and measure Triton kernels (CS336 lecture 6).

Kernels run on real Triton when a CUDA GPU and triton are present, else on minitriton, the
NumPy simulator (override with TRITONLAB_BACKEND=triton|sim|interpret)."""


def lectures_dir():
    env = os.environ.get("TRITONLAB_LECTURES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "lectures"


def available_lectures():
    folder = lectures_dir()
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.py"))}


def _match(name, lectures):
    if name in lectures:
        return [lectures[name]]
    hits = [p for stem, p in lectures.items()
            if stem.startswith(name) or stem.split("_", 1)[1].startswith(name)
            or name in stem.split("_")]
    return hits


def cmd_lecture(args):
    lectures = available_lectures()
    if not lectures:
        print(f"no lecture scripts found in {lectures_dir()}; run from a checkout of the "
              "repository or set TRITONLAB_LECTURES", file=sys.stderr)
        return 2
    if args.name in (None, "list"):
        print("lectures:", ", ".join(lectures))
        if args.name == "list":
            return 0
        args.name = "all"
    paths = list(lectures.values()) if args.name == "all" else _match(args.name, lectures)
    if len(paths) != 1 and args.name != "all":
        what = "matches several" if paths else "matches none"
        print(f"lecture {args.name!r} {what} of: {', '.join(lectures)}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"\n=== {path.stem} ===\n", flush=True)
        runpy.run_path(str(path), run_name="__main__")
    return 0


def cmd_info(args):
    from . import backend
    import numpy
    import torch
    print(f"backend : {backend.NAME} ({backend.describe()})")
    print(f"device  : {backend.DEVICE}")
    print(f"torch   : {torch.__version__}, numpy {numpy.__version__}")
    print(f"lectures: {', '.join(available_lectures()) or 'none found'}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="tritonlab", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("lecture", help="run a lecture script (or all of them)",
                       description="Run the lecture scripts, which print the lecture's tables. "
                                   "NAME is a number (02), a full name "
                                   "(02_triton_elementwise), a word of it (elementwise), "
                                   "'all' (the default) or 'list'.")
    p.add_argument("name", nargs="?", metavar="NAME|all|list")
    p.set_defaults(func=cmd_lecture)
    p = sub.add_parser("info", help="say which backend and versions are in use")
    p.set_defaults(func=cmd_info)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
