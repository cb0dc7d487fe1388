"""`tritonlab viz KERNEL_SCRIPT`: run a script on minitriton with every launch traced, and draw
who touched what (docs/visualization.md): per launch, a PNG per argument, one program's view
and the self-contained HTML report."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from .options import UserError, positive_int

DEFAULT_OUT = "tritonlab-viz"


def run_viz(args):
    import minitriton
    import minitriton.viz
    from minitriton.runner import run

    if args.script is None:  # optional for argparse only: its message would call ARG required
        raise UserError("give the script to run: tritonlab viz KERNEL_SCRIPT [ARG ...] "
                        "(tritonlab viz --help says more)")
    script = Path(args.script)
    if not script.is_file():
        raise UserError(f"no such script: {script}")
    os.environ["TRITONLAB_BACKEND"] = "sim"  # tritonlab's kernels on minitriton, traced
    with minitriton.trace(limit=args.limit) as traced:
        status = run(str(script), args.args)
    launches, failed = traced.all, traced.failed
    if not launches:
        if status:
            raise UserError(f"{script} failed (exit status {status}) before it launched a "
                            "minitriton kernel: its own error is printed above")
        raise UserError(f"{script} launched no minitriton kernel")
    out = Path(args.out)
    # the first --max-launches launches, and every launch that failed (the one to look at)
    shown = [t for i, t in enumerate(launches) if i < args.max_launches or t in failed]
    written = []
    for i, trace in enumerate(launches):
        if trace not in shown:
            continue
        folder = out / f"{i:02d}_{trace.kernel}"
        written += minitriton.viz.save(trace, folder, html=not args.no_html,
                                       program=args.program)  # None: the failing program
    print(f"{len(shown)} of {len(launches)} traced launches drawn into {out}/ "
          f"({len(written)} files)" + ("" if len(shown) == len(launches) else
                                       f"; --max-launches {len(launches)} draws them all"))
    for trace in shown:
        print(trace.summary())
    if status and failed:
        failure = failed[-1].failure
        hint = ("; --limit N raises the limit (or shrink the sizes)"
                if failure.error == "TraceLimitError" else "")
        print(f"tritonlab viz: {script} {failure.headline()}; drawn up to the error in "
              f"{out}/{hint}")
    elif status:
        print(f"tritonlab viz: {script} exited with status {status} outside a launch; the "
              "launches before that are drawn")
    return status


def _program(text):
    """A program id: a linear id (5) or one per grid axis (1,2 or 1,2,0)."""
    try:
        parts = [int(p) for p in text.strip("() ").split(",")]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 3 or min(parts) < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a program id; give a linear id "
                                         "(e.g. 5) or one per grid axis (e.g. 1,2)")
    return parts[0] if len(parts) == 1 else tuple(parts)


def register(subparsers):
    p = subparsers.add_parser(
        "viz", help="draw which program touched what, for every launch of a script",
        usage="%(prog)s [-h] [--out DIR] [--program PID] [--limit N] [--max-launches N] "
              "[--no-html] KERNEL_SCRIPT [ARG ...]",
        description="Run KERNEL_SCRIPT on minitriton (the NumPy simulator) with every launch "
                    "traced (minitriton.trace()), and save per launch: a PNG per argument "
                    "(each element coloured by the program that wrote or read it, masked lanes "
                    "hatched, races marked), one program's view step by step, and an HTML "
                    "report that opens from disk. See docs/visualization.md.")
    p.add_argument("script", metavar="KERNEL_SCRIPT", nargs="?")
    p.add_argument("args", nargs="*", metavar="ARG", help="arguments for the script")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for the pictures (default ./{DEFAULT_OUT})")
    p.add_argument("--program", type=_program, default=None, metavar="PID",
                   help="whose view to draw: a linear id or x,y (default: program 0, or the "
                        "middle of a 2-D grid)")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="element accesses one launch may record (Settings.trace_limit)")
    p.add_argument("--max-launches", type=positive_int, default=20, metavar="N",
                   help="draw at most the first N launches (default 20)")
    p.add_argument("--no-html", action="store_true", help="pictures only")
    p.set_defaults(func=run_viz)
