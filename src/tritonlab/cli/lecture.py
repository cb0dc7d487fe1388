"""`tritonlab lecture`: run the lecture scripts, which print the lecture's tables."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

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


def _own_out_option():
    """A lecture script run directly (`python lectures/02_triton_elementwise.py --out DIR`)
    takes --out itself; under `tritonlab lecture` the command's --out has set $TRITONLAB_OUT."""
    if not Path(sys.argv[0]).name[:2].isdigit():
        return
    parser = argparse.ArgumentParser(prog=Path(sys.argv[0]).name, add_help=False)
    parser.add_argument("--out")
    known, _ = parser.parse_known_args(sys.argv[1:])
    if known.out:
        os.environ[OUT_ENV] = known.out


def save_pictures(traced, name, program=None):
    """Draw the traced launches of a lecture (`with minitriton.trace() as t:`) into
    <output_dir()>/pictures: a PNG per argument, one program's view and the HTML report, named
    after `name`; prints where, and returns the paths."""
    import minitriton.viz

    _own_out_option()
    folder = output_dir() / "pictures"
    paths = minitriton.viz.save(traced, folder, html=True, program=program, name=name)
    pngs = [p for p in paths if p.suffix == ".png"]
    print(f"  pictures: {len(pngs)} PNGs and {len(paths) - len(pngs)} HTML report"
          f"{'s' if len(paths) - len(pngs) != 1 else ''} in {folder}/{name}.*")
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
        runpy.run_path(str(path), run_name="__main__")
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
