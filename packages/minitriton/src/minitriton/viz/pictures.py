"""PNG pictures of a trace (matplotlib, drawn off-screen with the Agg canvas; no pyplot, so no
global state changes).

  * `draw_argument`: one argument in its own shape (1-D a strip, 2-D a grid, higher dims
    slices of the last two), each element coloured by the program that wrote it (by the
    program that read it, for an argument only read); hatched: elements that only masked-off
    lanes would have addressed (past the end of a 1-D tensor as extra cells; the title counts
    the others); red cross-hatch: races.
  * `draw_program`: one program's view: what it read and wrote, coloured and numbered by the
    k-step (how many times it had run that kernel line before: the matmul's A row-panel and
    B column-panel tiles along K).

The words of each (`describe_argument`, `describe_program`: title, notes, legend) are apart
from the drawing, so that what they count is what is drawn. A launch that failed (its trace's
`failure`) is drawn up to the error, the failing access outlined in red (past the end of a
strip as extra cells), and every picture says what stopped it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

WRAP = 1024  # a 1-D strip longer than 2 * WRAP is drawn in rows of WRAP elements
MAX_SLICES = 4  # slices drawn of a tensor of 3 or more dimensions
UNTOUCHED = (0.93, 0.93, 0.93)
RACE = "#d62728"
FAILED = "#e00000"  # the failing access of a launch that stopped with an error
LEGEND_PROGRAMS = 12


def _matplotlib():
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    return matplotlib, Figure, FigureCanvasAgg


def program_colours(n):
    """RGB per program (n, 3): tab20, repeating past 20 programs."""
    matplotlib, _, _ = _matplotlib()
    cmap = matplotlib.colormaps["tab20"]
    order = np.r_[0:20:2, 1:20:2]  # the strong colours first, then their light partners
    return np.array([cmap(int(order[i % 20]))[:3] for i in range(max(n, 1))])


def panels(shape):
    """How a tensor of this shape is drawn: [(title, positions)], `positions` a 2-D array of
    C-order element indices (-1: no element, padding of a wrapped strip)."""
    numel = int(np.prod(shape, dtype=np.int64))
    if len(shape) <= 1:
        if numel <= 2 * WRAP:
            return [("", np.arange(numel).reshape(1, numel))]
        rows = -(-numel // WRAP)
        pos = np.full(rows * WRAP, -1)
        pos[:numel] = np.arange(numel)
        return [(f"(rows of {WRAP} elements)", pos.reshape(rows, WRAP))]
    r, c = shape[-2], shape[-1]
    lead = shape[:-2]
    count = int(np.prod(lead, dtype=np.int64)) if lead else 1
    out = []
    for s in range(min(count, MAX_SLICES)):
        title = "" if not lead else \
            "[" + ", ".join(str(int(i)) for i in np.unravel_index(s, lead)) + ", :, :]"
        out.append((title, s * r * c + np.arange(r * c).reshape(r, c)))
    if count > MAX_SLICES:
        out[-1] = (out[-1][0] + f" (first {MAX_SLICES} of {count} slices)", out[-1][1])
    return out


def _runs(mask):
    """(row, start, length) of each horizontal run of True cells of a 2-D bool array."""
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), np.int8)
    padded[:, 1:-1] = mask
    d = np.diff(padded, axis=1)
    rows, starts = np.nonzero(d == 1)
    _, stops = np.nonzero(d == -1)
    return rows, starts, stops - starts


def _overlay(ax, mask, hatch, colour, lw=0.0):
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    if not mask.any():
        return
    rects = [Rectangle((s, r), n, 1) for r, s, n in zip(*_runs(mask))]
    ax.add_collection(PatchCollection(rects, facecolor="none", edgecolor=colour, hatch=hatch,
                                      linewidth=lw))


def _setup_axis(ax, pos, title):
    rows, cols = pos.shape
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_title(title, fontsize=9, loc="left")
    ax.tick_params(labelsize=7)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if rows == 1:
        ax.set_yticks([])
    ax.set_aspect("equal" if rows > 1 and cols <= 8 * rows else "auto")


def _panel_height(shape_2d, width=10.0):
    rows, cols = shape_2d
    return 0.8 if rows == 1 else float(np.clip(width * rows / cols, 1.5, 5.0))


def _figure(n_panels, shape_2d):
    _, Figure, FigureCanvasAgg = _matplotlib()
    rows, cols = shape_2d
    width = 10.0
    panel_h = 1.1 if rows == 1 else float(np.clip(width * rows / cols, 1.5, 7.0))
    fig = Figure(figsize=(width, panel_h * n_panels + 1.6), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _legend(fig, entries):
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=f, edgecolor=e, hatch=h, label=label) for label, f, e, h in entries]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8,
               frameon=False)


def _program_label(trace, p):
    pid = trace.pid_of(p)
    return f"program {pid[0]}" if len(pid) == 1 else f"program {pid}"


def _n(count, noun, plural=None):
    """'1 element', '3 elements' (thousands separated)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def _failure_note(trace):
    """The line every picture of a failed launch begins its notes with."""
    f = trace.failure
    where = "" if f.pid is None else f" in {_program_label(trace, f.program)}"
    line = "" if f.site is None else f" at line {f.site.line}"
    return f"stopped by {f.error}{where}{line}: drawn up to the error"


def _past_end(arg, offsets):
    """Positions past the end of a 1-D argument, in elements of the view, of storage offsets
    counted from the view's start (what a strip can draw as extra cells)."""
    if len(arg.shape) != 1:
        return np.zeros(0, np.int64)
    stride = arg.strides[0] if arg.strides and arg.strides[0] else 1
    rel = offsets[offsets % stride == 0] // stride
    return np.unique(rel[(rel >= arg.numel) & (rel < arg.numel + 4 * WRAP)])


def _ghosts(arg):
    """Positions past the end of a 1-D argument that its masked lanes would have addressed."""
    return _past_end(arg, arg.masked_offset[arg.masked_index < 0] - arg.view_lo)


def _failure_drawn(trace, f):
    """Whether a picture shows any element of the failing access (inside the tensor, or past
    the end of a strip as extra cells)."""
    if f.arg is None:
        return False
    arg = trace.args[f.arg]
    strip = len(arg.shape) == 1 and arg.numel <= 2 * WRAP
    return bool((f.index >= 0).any()) or \
        (strip and _past_end(arg, f.offsets[f.index < 0]).size > 0)


def _failure_access(trace, f, its=""):
    """'red: the failing load of ...' where the picture shows it, else '... (not drawn)'."""
    text = f"{its or 'the failing'} {f.access()}"
    return f"red: {text}" if _failure_drawn(trace, f) else f"{text} (not drawn)"


def _argument_layers(trace, name):
    """What the picture of one argument draws: who owns each element, the hatched, raced and
    failing elements, the strip's extra cells, and the layout."""
    arg = trace.args[name]
    written = arg.written
    owner = arg.writer() if written else arg.reader()
    masked = np.zeros(arg.numel, bool)
    masked[arg.masked_index[arg.masked_index >= 0]] = True
    # an element that an active lane also touched is drawn as accessed: a row's masked tail
    # (softmax's columns past n_cols) addresses the next row's first elements, which are real
    accessed = (arg.writer() >= 0) | (arg.reader() >= 0)
    masked &= ~accessed
    failure = trace.failure if trace.failure is not None and trace.failure.arg == name \
        else None
    bad = np.zeros(arg.numel, bool)
    bad_past = np.zeros(0, np.int64)
    if failure is not None:
        bad[failure.index[failure.index >= 0]] = True
        bad_past = _past_end(arg, failure.offsets[failure.index < 0])
    layout = panels(arg.shape)
    strip = len(layout) == 1 and layout[0][1].shape[0] == 1
    ghosts = _ghosts(arg) if strip else np.zeros(0, np.int64)
    bad_past = bad_past if strip else np.zeros(0, np.int64)
    extra = max([int(g.max()) - arg.numel + 1 for g in (ghosts, bad_past) if g.size] or [0])
    if extra:  # past the end of a strip: extra cells, as many as the lanes reach
        layout = [(layout[0][0], np.concatenate([layout[0][1], np.full((1, extra), -2)],
                                                axis=1))]
    return {"arg": arg, "written": written, "owner": owner, "masked": masked,
            "accessed": accessed, "race": arg.races(), "bad": bad, "bad_past": bad_past,
            "ghosts": ghosts, "layout": layout, "failure": failure}


def describe_argument(trace, name, layers=None):
    """The words of an argument's picture: {"title", "notes" (lines under it), "legend"
    (labels), "hatched" (cells hatched as only masked-off lanes' elements)}."""
    d = layers or _argument_layers(trace, name)
    arg, written = d["arg"], d["written"]
    what = "wrote" if written else "read"
    title = (f"{trace.kernel}: `{name}` {arg.dtype} {arg.shape}, coloured by the program that "
             f"{what} each element ({'last writer' if written else 'first reader'})")
    notes = [_failure_note(trace)] if trace.failure is not None else []
    if d["failure"] is not None:
        notes.append(_failure_access(trace, d["failure"]))
    inside, ghosts = int(d["masked"].sum()), int(d["ghosts"].size)
    if inside:
        notes.append(f"{_n(inside, 'hatched element')}: only masked-off lanes addressed "
                     f"{'it' if inside == 1 else 'them'}")
    if ghosts:
        notes.append(f"{_n(ghosts, 'hatched cell')} past the end: elements only masked-off "
                     f"lanes addressed")
    idx = arg.masked_index
    at_accessed = int((idx >= 0).sum() - d["masked"][idx[idx >= 0]].sum())
    outside = arg.masked_offset[idx < 0] - arg.view_lo
    drawn = 0
    if ghosts:  # lanes past the end that the strip's extra cells show
        stride = arg.strides[0] if arg.strides and arg.strides[0] else 1
        drawn = int(((outside % stride == 0) & np.isin(outside // stride, d["ghosts"])).sum())
    undrawn_outside = outside.size - drawn + arg.masked_unknown
    undrawn = at_accessed + undrawn_outside
    if undrawn:
        parts = [f"{at_accessed:,} at elements other lanes accessed" if at_accessed else "",
                 f"{undrawn_outside:,} outside the tensor" if undrawn_outside else ""]
        notes.append(f"{_n(undrawn, 'masked-off lane')} not drawn "
                     f"({', '.join(p for p in parts if p)})")
    race = int(d["race"].sum())
    if race:
        notes.append(f"{_n(race, 'element')} raced")
    several = arg.several_writers() if written else arg.several_readers()
    if several.any():
        most = int((arg.writers() if written else arg.readers()).max())
        notes.append(f"{_n(int(several.sum()), 'element')} {'written' if written else 'read'} "
                     f"by several programs (up to {most})")
    owner = d["owner"]
    shown = sorted({int(p) for p in np.unique(owner[owner >= 0])})
    legend = [_program_label(trace, p) for p in shown[:LEGEND_PROGRAMS]]
    if len(shown) > LEGEND_PROGRAMS:
        legend.append(f"... {_n(len(shown), 'program')} (colours repeat every 20)")
    legend.append("untouched")
    hatched = inside + ghosts
    if hatched:
        legend.append("masked lane (not accessed)")
    if race:
        legend.append("race")
    if d["failure"] is not None and _failure_drawn(trace, d["failure"]):
        legend.append(f"failing {d['failure'].kind or 'access'}")
    return {"title": title, "notes": notes, "legend": legend, "hatched": hatched,
            "programs": shown}


def draw_argument(trace, name, path):
    """The PNG of one argument (see the module's docstring); returns its path."""
    d = _argument_layers(trace, name)
    words = describe_argument(trace, name, d)
    arg, owner, layout = d["arg"], d["owner"], d["layout"]
    colours = program_colours(trace.num_programs)
    if len(layout) > 1:  # slices of a 3-D or higher tensor, side by side
        _, Figure, FigureCanvasAgg = _matplotlib()
        rows, cols = layout[0][1].shape
        fig = Figure(figsize=(10.0, float(np.clip(10.0 / len(layout) * rows / cols, 1.5, 6.0))
                              + 2.0), dpi=100)
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, len(layout), squeeze=False)[0]
    else:
        fig = _figure(1, layout[0][1].shape)
        axes = fig.subplots(1, 1, squeeze=False)[:, 0]
    for ax, (title, pos) in zip(axes, layout):
        inside = pos >= 0
        image = np.empty(pos.shape + (3,))
        image[:] = UNTOUCHED
        who = np.where(inside, owner[np.clip(pos, 0, None)], -1)
        image[who >= 0] = colours[who[who >= 0] % len(colours)]
        image[pos < 0] = 1.0
        ax.imshow(image, extent=(0, pos.shape[1], pos.shape[0], 0), interpolation="nearest",
                  aspect="auto")
        _setup_axis(ax, pos, title)
        cell = np.clip(pos, 0, None)
        columns = np.broadcast_to(np.arange(pos.shape[1]), pos.shape)
        past = pos == -2  # a strip's extra cells: their columns are their positions
        _overlay(ax, (inside & d["masked"][cell]) | (past & np.isin(columns, d["ghosts"])),
                 "////", "0.35")
        _overlay(ax, inside & d["race"][cell], "xx", RACE, lw=0.8)
        _overlay(ax, (inside & d["bad"][cell]) | (past & np.isin(columns, d["bad_past"])),
                 "", FAILED, lw=2.0)
    fig.suptitle(words["title"] + "".join("\n" + n for n in words["notes"]), fontsize=10)
    entries = [(_program_label(trace, p), colours[p % len(colours)], "none", None)
               for p in words["programs"][:LEGEND_PROGRAMS]]
    if len(words["programs"]) > LEGEND_PROGRAMS:
        entries.append((words["legend"][len(entries)], "white", "white", None))
    entries.append(("untouched", UNTOUCHED, "0.6", None))
    if words["hatched"]:
        entries.append(("masked lane (not accessed)", "white", "0.35", "////"))
    if d["race"].any():
        entries.append(("race", "white", RACE, "xx"))
    if d["failure"] is not None and _failure_drawn(trace, d["failure"]):
        entries.append((words["legend"][-1], "white", FAILED, None))
    _legend(fig, entries)
    top = 0.95 - 0.03 * max(0, len(words["notes"]) - 1)
    fig.tight_layout(rect=(0, 0.08, 1, top))
    fig.savefig(path)
    return Path(path)


def _program_panels(trace, view):
    """The arguments one program's view draws: those it touched, and the failing access's."""
    names = [n for n in trace.args if view.of(n)]
    f = trace.failure
    if f is not None and f.program == view.program and f.arg is not None and \
            f.arg not in names:
        names.append(f.arg)
    return names


def has_view(trace, pid):
    """Whether `draw_program` has something to draw for this program."""
    return bool(_program_panels(trace, trace.program(pid)))


def describe_program(trace, pid, view=None):
    """The words of one program's view: {"title", "notes", "legend"}."""
    view = view or trace.program(pid)
    label = _program_label(trace, view.program)
    n = len(view.steps)
    title = (f"{trace.kernel}: what {label} read and wrote, step by step "
             f"({_n(n, 'memory operation')})\ncolour and number: the k-step, how many times "
             f"the program had run that kernel line before (0: the first time)")
    last = max((s.visit for s in view.steps), default=0)
    legend = [] if not n else ["k-step 0 (each line ran once)"] if last == 0 else \
        ["k-step 0", f"k-step {last}"]
    legend += ["written (stored)", "not touched by this program"]
    if any(s.masked.size for s in view.steps):
        legend.append("masked lane")
    notes = []
    f = trace.failure
    if f is not None:
        if f.program == view.program:
            line = "" if f.site is None else f" at line {f.site.line}"
            notes.append(f"stopped at its step {f.step} by {f.error}{line}" +
                         (f"; {_failure_access(trace, f, 'its')}" if f.arg is not None else ""))
            if _failure_drawn(trace, f):
                legend.append(f"failing {f.kind or 'access'}")
        else:
            notes.append(_failure_note(trace))
    return {"title": title, "notes": notes, "legend": legend}


def draw_program(trace, pid, path):
    """One program's view (see the module's docstring); returns the PNG's path."""
    matplotlib, _, _ = _matplotlib()
    view = trace.program(pid)
    names = _program_panels(trace, view)
    if not names:
        raise ValueError(f"{_program_label(trace, view.program)} of {trace.kernel} touched no "
                         "memory")
    words = describe_program(trace, pid, view)
    f = trace.failure if trace.failure is not None and \
        trace.failure.program == view.program else None
    layouts, past = {}, {}
    for n in names:
        shape = trace.args[n].shape
        flat2 = shape if len(shape) == 2 else \
            ((int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]) if len(shape) > 2 else shape)
        layouts[n] = panels(flat2)[0][1]
        past[n] = np.zeros(0, np.int64)
        if f is not None and f.arg == n and layouts[n].shape[0] == 1:  # a strip: extra cells
            past[n] = _past_end(trace.args[n], f.offsets[f.index < 0])
            if past[n].size:
                extra = int(past[n].max()) - trace.args[n].numel + 1
                layouts[n] = np.concatenate([layouts[n], np.full((1, extra), -2)], axis=1)
    side_by_side = all(p.shape[0] >= p.shape[1] / 3 for p in layouts.values())
    if side_by_side:  # square-ish grids (matmul's A, B, C): one row of panels
        _, Figure, FigureCanvasAgg = _matplotlib()
        fig = Figure(figsize=(max(8.0, 4.2 * len(names)), 5.6), dpi=100)
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, len(names), squeeze=False)[0]
    else:  # one above the other, a strip low, a grid as high as its shape wants
        _, Figure, FigureCanvasAgg = _matplotlib()
        heights = [_panel_height(p.shape) for p in layouts.values()]
        fig = Figure(figsize=(10.0, sum(heights) + 0.5 * len(names) + 1.6), dpi=100)
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(names), 1, squeeze=False,
                            gridspec_kw={"height_ratios": heights})[:, 0]
    cmap = matplotlib.colormaps["viridis"]
    for ax, name in zip(axes, names):
        pos = layouts[name]
        steps = view.of(name)
        visits = max((s.visit for s in steps), default=0) + 1
        numel = trace.args[name].numel
        order = np.full(numel, -1)
        masked = np.zeros(numel, bool)
        wrote = np.zeros(numel, bool)
        bad = np.zeros(numel, bool)
        for s in steps:
            order[s.indices] = s.visit
            masked[s.masked] = True
            if s.kind != "load":
                wrote[s.indices] = True
        if f is not None and f.arg == name:
            bad[f.index[f.index >= 0]] = True
        inside = pos >= 0
        cell = np.clip(pos, 0, None)
        image = np.empty(pos.shape + (3,))
        image[:] = UNTOUCHED
        image[~inside] = 1.0
        k = np.where(inside, order[cell], -1)
        image[k >= 0] = cmap(k[k >= 0] / max(visits - 1, 1))[..., :3]
        ax.imshow(image, extent=(0, pos.shape[1], pos.shape[0], 0), interpolation="nearest",
                  aspect="auto")
        if steps:
            kinds = sorted({s.kind for s in steps})
            lines = sorted({s.site.line for s in steps})
            title = (f"`{name}` {trace.args[name].shape}: {'/'.join(kinds)}\nat "
                     f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}, "
                     f"{_n(visits, 'k-step')}")
        else:  # the failing access is the program's first of this argument
            title = (f"`{name}` {trace.args[name].shape}: the failing {f.kind or 'access'}"
                     + (f"\nat line {f.site.line}" if f.site is not None else ""))
        _setup_axis(ax, pos, title)
        columns = np.broadcast_to(np.arange(pos.shape[1]), pos.shape)
        _overlay(ax, inside & masked[cell] & (order[cell] < 0), "////", "0.35")
        _overlay(ax, inside & wrote[cell], "..", "black")
        _overlay(ax, (inside & bad[cell]) | ((pos == -2) & np.isin(columns, past[name])), "",
                 FAILED, lw=2.0)
        if len(steps) <= 64:
            for s in steps:
                where = np.isin(pos, s.indices)
                if not where.any():
                    continue
                r, c = np.nonzero(where)
                # a number only where the step's cells leave room for it
                if np.ptp(r) + 1 >= pos.shape[0] / 30 and np.ptp(c) + 1 >= pos.shape[1] / 30:
                    ax.text(c.mean() + 0.5, r.mean() + 0.5, str(s.visit), ha="center",
                            va="center", fontsize=8, color="white" if s.visit < visits / 2
                            else "black", fontweight="bold")
    fig.suptitle(words["title"] + "".join("\n" + n for n in words["notes"]), fontsize=10)
    last = len(words["legend"]) - (1 if f is not None and _failure_drawn(trace, f) else 0)
    k_steps = sum(label.startswith("k-step") for label in words["legend"])
    colours = [cmap(0.0)[:3], cmap(1.0)[:3]][:k_steps]
    entries = [(label, colour, "none", None) for label, colour in zip(words["legend"], colours)]
    styles = {"written (stored)": ("white", "black", ".."),
              "not touched by this program": (UNTOUCHED, "0.6", None),
              "masked lane": ("white", "0.35", "////")}
    entries += [(label, *styles[label]) for label in words["legend"][len(colours):last]]
    if last < len(words["legend"]):
        entries.append((words["legend"][-1], "white", FAILED, None))
    _legend(fig, entries)
    top = 0.95 - 0.03 * len(words["notes"])
    fig.tight_layout(rect=(0, 0.08, 1, top))
    fig.savefig(path)
    return Path(path)
