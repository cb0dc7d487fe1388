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
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

WRAP = 1024  # a 1-D strip longer than 2 * WRAP is drawn in rows of WRAP elements
MAX_SLICES = 4  # slices drawn of a tensor of 3 or more dimensions
UNTOUCHED = (0.93, 0.93, 0.93)
RACE = "#d62728"
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


def _ghosts(arg):
    """Positions past the end (or before the start) of a 1-D argument that its masked lanes
    would have addressed, in elements of the view."""
    if len(arg.shape) != 1:
        return np.zeros(0, np.int64)
    out = arg.masked_index < 0
    rel = arg.masked_offset[out] - arg.view_lo
    stride = arg.strides[0] if arg.strides and arg.strides[0] else 1
    rel = rel[rel % stride == 0] // stride
    return np.unique(rel[(rel >= arg.numel) & (rel < arg.numel + 4 * WRAP)])


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


def draw_argument(trace, name, path):
    """The PNG of one argument (see the module's docstring); returns its path."""
    arg = trace.args[name]
    written = arg.written
    owner = arg.writer() if written else arg.reader()
    colours = program_colours(trace.num_programs)
    race = arg.races()
    masked = np.zeros(arg.numel, bool)
    masked[arg.masked_index[arg.masked_index >= 0]] = True
    # an element that an active lane also touched is drawn as accessed: a row's masked tail
    # (softmax's columns past n_cols) addresses the next row's first elements, which are real
    masked &= (arg.writer() < 0) & (arg.reader() < 0)
    ghosts = _ghosts(arg)
    layout = panels(arg.shape)
    if ghosts.size and len(layout) == 1 and layout[0][1].shape[0] == 1:
        # past the end of a strip: extra cells, as many as the masked lanes reach
        extra = int(ghosts.max()) - arg.numel + 1
        layout = [(layout[0][0], np.concatenate([layout[0][1],
                                                 np.full((1, extra), -2)], axis=1))]
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
        ghost = (pos == -2) & np.isin(columns, ghosts)  # a strip's columns are positions
        _overlay(ax, (inside & masked[cell]) | ghost, "////", "0.35")
        _overlay(ax, inside & race[cell], "xx", RACE, lw=0.8)
    what = "wrote" if written else "read"
    title = (f"{trace.kernel}: `{name}` {arg.dtype} {arg.shape}, coloured by the program that "
             f"{what} each element ({'last writer' if written else 'first reader'})")
    notes = []
    if arg.masked_count():
        outside = int((arg.masked_index < 0).sum()) + arg.masked_unknown
        notes.append(f"{arg.masked_count():,} masked lanes ({outside:,} pointing outside the "
                     f"tensor, {int(masked.sum()):,} elements addressed only by masked lanes)")
    if race.any():
        notes.append(f"{int(race.sum()):,} elements raced")
    several = arg.several_writers() if written else arg.several_readers()
    if several.any():
        notes.append(f"{int(several.sum()):,} elements {what} by several programs")
    fig.suptitle(title + ("\n" + "; ".join(notes) if notes else ""), fontsize=10)
    shown = sorted({int(p) for p in np.unique(owner[owner >= 0])})
    entries = [(_program_label(trace, p), colours[p % len(colours)], "none", None)
               for p in shown[:LEGEND_PROGRAMS]]
    if len(shown) > LEGEND_PROGRAMS:
        entries.append((f"... {len(shown)} programs (colours repeat every 20)", "white",
                        "white", None))
    entries.append(("untouched", UNTOUCHED, "0.6", None))
    if arg.masked_count():
        entries.append(("masked lane (not accessed)", "white", "0.35", "////"))
    if race.any():
        entries.append(("race", "white", RACE, "xx"))
    _legend(fig, entries)
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path)
    return Path(path)


def draw_program(trace, pid, path):
    """One program's view (see the module's docstring); returns the PNG's path."""
    matplotlib, _, _ = _matplotlib()
    view = trace.program(pid)
    names = [n for n in trace.args if view.of(n)]
    if not names:
        raise ValueError(f"{_program_label(trace, view.program)} of {trace.kernel} touched no "
                         "memory")
    layouts = {}
    for n in names:
        shape = trace.args[n].shape
        flat2 = shape if len(shape) == 2 else \
            ((int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]) if len(shape) > 2 else shape)
        layouts[n] = panels(flat2)[0][1]
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
        visits = max(s.visit for s in steps) + 1
        numel = trace.args[name].numel
        order = np.full(numel, -1)
        masked = np.zeros(numel, bool)
        wrote = np.zeros(numel, bool)
        for s in steps:
            order[s.indices] = s.visit
            masked[s.masked] = True
            if s.kind != "load":
                wrote[s.indices] = True
        inside = pos >= 0
        cell = np.clip(pos, 0, None)
        image = np.empty(pos.shape + (3,))
        image[:] = UNTOUCHED
        image[~inside] = 1.0
        k = np.where(inside, order[cell], -1)
        image[k >= 0] = cmap(k[k >= 0] / max(visits - 1, 1))[..., :3]
        ax.imshow(image, extent=(0, pos.shape[1], pos.shape[0], 0), interpolation="nearest",
                  aspect="auto")
        kinds = sorted({s.kind for s in steps})
        lines = sorted({s.site.line for s in steps})
        _setup_axis(ax, pos, f"`{name}` {trace.args[name].shape}: {'/'.join(kinds)}\nat "
                             f"line{'s' if len(lines) > 1 else ''} "
                             f"{', '.join(map(str, lines))}, {visits} k-step"
                             f"{'s' if visits > 1 else ''}")
        _overlay(ax, inside & masked[cell] & (order[cell] < 0), "////", "0.35")
        _overlay(ax, inside & wrote[cell], "..", "black")
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
    fig.suptitle(f"{trace.kernel}: what {_program_label(trace, view.program)} read and wrote, "
                 f"step by step ({len(view.steps)} memory operations)\ncolour and number: the k-step, "
                 f"the how-manieth time it ran that line", fontsize=10)
    entries = [("k-step 0", cmap(0.0)[:3], "none", None),
               (f"k-step {max(s.visit for s in view.steps)}", cmap(1.0)[:3], "none", None),
               ("written (stored)", "white", "black", ".."),
               ("not touched by this program", UNTOUCHED, "0.6", None)]
    if any(s.masked.size for s in view.steps):
        entries.append(("masked lane", "white", "0.35", "////"))
    _legend(fig, entries)
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path)
    return Path(path)
