"""Pictures and an HTML report of a launch's access record (`minitriton.trace()`).

    with minitriton.trace() as t:
        kernel[grid](...)
    paths = minitriton.viz.save(t, "out/", html=True)

`save` writes, per traced launch, one PNG per argument (`pictures.draw_argument`), one
program's view (`pictures.draw_program`) and, with `html=True`, the self-contained report
(`html.html_report`). A launch that failed is drawn up to the error from its partial trace
(`err.trace`, or `Tracing.failed` of a `minitriton.trace()` block): the failing program's view
by default, the failing access marked, and what stopped it said in every picture. The PNGs
need matplotlib (`pip install minitriton[plot]`), imported only when a picture is drawn; the
HTML needs nothing.
"""
from __future__ import annotations

import re
from pathlib import Path

from .html import html_report
from .pictures import draw_argument, draw_program, has_view

__all__ = ["save", "html_report", "draw_argument", "draw_program", "traces"]


def traces(obj):
    """The traces in `obj`: a Trace, a `minitriton.trace()` block's Tracing (the launches
    that ran to their end, then those an error stopped), a LaunchRecord recorded with
    Settings.trace, an error that carries the trace of the launch it stopped, or a list of
    them."""
    if hasattr(obj, "args") and hasattr(obj, "sites"):
        return [obj]
    if isinstance(obj, BaseException) and getattr(obj, "trace", None) is not None:
        return [obj.trace]
    if hasattr(obj, "launches") and hasattr(obj, "all"):
        return obj.all
    if getattr(obj, "trace", None) is not None and hasattr(obj, "kernel"):
        return [obj.trace]
    if hasattr(obj, "launches") or isinstance(obj, (list, tuple)):
        found = []
        for item in (obj.launches if hasattr(obj, "launches") else obj):
            found += traces(item)
        return found
    raise TypeError(f"not a trace: {type(obj).__name__} (record the launch with "
                    "minitriton.trace() or Settings(trace=True))")


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def save(trace, out, html=False, program=None, pictures=True, name=None):
    """Write the pictures (and with `html=True` the HTML report) of every traced launch in
    `trace` into the folder `out`; returns the paths written.

    program: whose view to draw (a linear id or a program id tuple; default: the program
        that failed, in a launch an error stopped; else program 0, or the middle program of
        the grid for a 2-D grid).
    name: the files' stem (default: the kernel's name, numbered when a kernel ran twice).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths, seen = [], {}
    for tr in traces(trace):
        stem = _safe(name or tr.kernel)
        seen[stem] = seen.get(stem, 0) + 1
        if seen[stem] > 1:
            stem = f"{stem}-{seen[stem]}"
        if pictures:
            failing = tr.failure.arg if tr.failure is not None else None
            for arg_name, arg in tr.args.items():
                if len(arg) or arg.masked_count() or arg_name == failing:
                    paths.append(draw_argument(tr, arg_name, out / f"{stem}.{_safe(arg_name)}.png"))
            pid = default_program(tr) if program is None else program
            if tr.num_programs and has_view(tr, pid):
                label = "-".join(str(i) for i in tr.pid_of(tr.linear(pid)))
                paths.append(draw_program(tr, pid, out / f"{stem}.program{label}.png"))
        if html:
            paths.append(html_report(tr, out / f"{stem}.html"))
    return paths


def default_program(trace):
    """The program that failed, in a launch an error stopped; else program 0, or for a 2-D or
    3-D grid the one in the middle (an inner tile, whose view shows the tiling best)."""
    if trace.failure is not None and trace.failure.program is not None:
        return trace.failure.program
    if len(trace.grid) == 1:
        return 0
    return trace.linear(tuple(g // 2 for g in trace.grid))
