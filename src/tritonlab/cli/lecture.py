"""`tritonlab lecture`: run the lecture scripts, which print the lecture's tables."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

from ..errors import BACKENDS, BackendError
from .options import UserError

OUT_ENV, DEFAULT_OUT = "TRITONLAB_OUT", "tritonlab-out"


def lectures_dir():
    env = os.environ.get("TRITONLAB_LECTURES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "lectures"  # src/tritonlab/cli/ -> the checkout


def available_lectures():
    folder = lectures_dir()
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.py"))}


def _match(name, lectures):
    """The lectures NAME selects: a number (2 or 02), the script's name (02_triton_elementwise,
    with or without .py or a folder), its start, or a word of it (elementwise)."""
    name = Path(name).name.removesuffix(".py")
    if name in lectures:
        return [lectures[name]]
    if name.isdigit():
        return [p for stem, p in lectures.items() if int(stem.split("_", 1)[0]) == int(name)]
    return [p for stem, p in lectures.items()
            if stem.startswith(name) or stem.split("_", 1)[1].startswith(name)
            or name in stem.split("_")]


def output_dir():
    """Where the lecture scripts write their files (plots, CSV, traces, generated code):
    $TRITONLAB_OUT, set by `tritonlab lecture --out DIR`, else ./tritonlab-out; made if need be.
    The scripts say where, once each."""
    path = Path(os.environ.get(OUT_ENV) or DEFAULT_OUT)
    path.mkdir(parents=True, exist_ok=True)
    return path


_RUNNING = []  # the scripts `tritonlab lecture` is running (runpy gives them its sys.argv[1:])


def lecture_options(script, doc, writes_files=True):
    """Parse the command line of a lecture script run as a program (`python
    lectures/02_triton_elementwise.py --out DIR`): --help (the script's docstring) and, where
    the lecture writes files, --out DIR; anything else, a typo like --outt included, is one
    line on stderr and exit code 2, before the lecture runs. Under `tritonlab lecture` (or
    imported) the script is not the program: the command has parsed its own line and set
    $TRITONLAB_OUT, and nothing is done here."""
    from .options import Parser, backend_problem

    if _RUNNING or not sys.argv or Path(sys.argv[0]).resolve() != Path(script).resolve():
        return
    parser = Parser(prog=Path(script).name, description=doc,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    if writes_files:
        parser.add_argument("--out", metavar="DIR", help=f"folder for the files the lecture "
                            f"writes (default: ${OUT_ENV}, else ./{DEFAULT_OUT})")
    args = parser.parse_args(sys.argv[1:])
    if getattr(args, "out", None):
        os.environ[OUT_ENV] = args.out
    # the backend, before the lecture imports it (its import fails with a traceback): the
    # lectures call this first
    name = os.environ.get("TRITONLAB_BACKEND", "").strip().lower()
    problem = backend_problem() or (str(BackendError.unknown(name))
                                    if name and name not in BACKENDS else None)
    if problem:
        print(f"{Path(script).name}: error: {problem}", file=sys.stderr)
        sys.exit(2)


def save_pictures(traced, name, program=None):
    """Draw the traced launches of a lecture (`with minitriton.trace() as t:`) into
    <output_dir()>/pictures: a PNG per argument, one program's view and the HTML report, named
    after `name` (`name-2` for the second launch, and so on); prints where, and returns the
    paths."""
    import minitriton.viz

    folder = output_dir() / "pictures"
    paths = minitriton.viz.save(traced, folder, html=True, program=program, name=name)
    pngs = [p for p in paths if p.suffix == ".png"]
    stems = dict.fromkeys(p.name.split(".")[0] for p in paths)
    kernels = [trace.kernel for trace in minitriton.viz.traces(traced)]
    files = (f"{next(iter(stems))}.*" if len(stems) == 1 else
             ", ".join(f"{stem}.* ({kernel})" for stem, kernel in zip(stems, kernels)))
    print(f"  pictures: {len(pngs)} PNGs and {len(paths) - len(pngs)} HTML report"
          f"{'s' if len(paths) - len(pngs) != 1 else ''} in {folder}/: {files}")
    return paths


def run_lecture(args):
    lectures = available_lectures()
    if not lectures:
        raise UserError(f"no lecture scripts found in {lectures_dir()}; run from a checkout of "
                        "the repository or set TRITONLAB_LECTURES")
    if args.name in (None, "list"):
        print("lectures:", ", ".join(lectures))
        if args.name == "list":
            return 0
        args.name = "all"
    paths = list(lectures.values()) if args.name == "all" else _match(args.name, lectures)
    if len(paths) != 1 and args.name != "all":
        what = "matches several" if paths else "matches none"
        raise UserError(f"lecture {args.name!r} {what} of: {', '.join(lectures)}")
    if args.out is not None:
        os.environ[OUT_ENV] = args.out  # the scripts read it, in this process and in any child
    for path in paths:
        print(f"\n=== {path.stem} ===\n", flush=True)
        _RUNNING.append(path)
        try:
            runpy.run_path(str(path), run_name="__main__")
        finally:
            _RUNNING.pop()
    return 0


def register(subparsers):
    p = subparsers.add_parser("lecture", help="run a lecture script (or all of them)",
                              description="Run the lecture scripts, which print the lecture's "
                                          "tables. NAME is a number (2 or 02), the script's name "
                                          "(02_triton_elementwise or 02_triton_elementwise.py), "
                                          "a word of it (elementwise), 'all' (the default) or "
                                          "'list'. The lectures write files (plots, CSV, a "
                                          f"trace, generated code, the pictures of 02-05's "
                                          f"kernels) into ./{DEFAULT_OUT}/ or the "
                                          f"folder --out or ${OUT_ENV} names.")
    p.add_argument("name", nargs="?", metavar="NAME|all|list")
    p.add_argument("--out", metavar="DIR", help=f"folder for the files the lectures write "
                   f"(default: ${OUT_ENV}, else ./{DEFAULT_OUT})")
    p.set_defaults(func=run_lecture)
