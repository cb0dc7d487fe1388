"""`triton.profiler.viewer` for minitriton's profiles: read a `.hatchet` file back, print a table.

    tree, metrics = parse(["tflop/s", "time/ms"], "matmul.hatchet")
    print_tree(tree, metrics)

Metrics, as Proton's viewer names them: time/s|ms|us|ns (and cpu_time/..., the same here),
avg_time/... (per call), flop/s, gflop/s, tflop/s and their widths (tflop16/s reads "flops16"),
byte/s, gbyte/s, tbyte/s, and any metric of the file by name ("count", "flops", "bytes", what
the program gave its scopes). Every time is host wall time (see minitriton.profiler), so the
rates are rates of the simulation on the CPU, and the table's header says so. Not here: "util"
(it needs GPU peaks and GPU times), hatchet's GraphFrame (the tree is a plain `Frame`), diffs.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

TIME = "cpu_time (ns)"
TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}  # ns per unit
RATE_PREFIXES = {"": 1.0, "g": 1e9, "t": 1e12}
_RATE = re.compile(r"^([gt]?)(flop|byte)(\d*)/s$")
_TIME = re.compile(r"^(avg_)?(cpu_)?time/(s|ms|us|ns)$")


@dataclass
class Frame:
    """A frame of the profile: its name, its metrics (inclusive over its children), the values
    the viewer derived (`values`, by column) and, at the root, the file's note on the clock."""

    name: str
    kind: str
    metrics: dict
    children: list = field(default_factory=list)
    values: dict = field(default_factory=dict)
    note: dict = field(default_factory=dict)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


def _frame(literal):
    children = [_frame(c) for c in literal.get("children", [])]
    metrics = dict(literal["metrics"])
    for child in children:  # the file holds each frame's own counts; time is inclusive already
        for key, value in child.metrics.items():
            if key != TIME:
                metrics[key] = metrics.get(key, 0) + value
    return Frame(literal["frame"]["name"], literal["frame"].get("kind", ""), metrics, children)


def read(filename):
    """The tree of a profile written by finalize() (its `note` says how it was measured)."""
    with open(filename) as f:
        database = json.load(f)
    if not (isinstance(database, list) and database and "frame" in database[0]):
        raise ValueError(f"{filename} is not a profile written by triton.profiler.finalize()")
    tree = _frame(database[0])
    tree.note = database[1] if len(database) > 1 else {}
    return tree


def _column(tree, metric):
    """(column name, the function giving a frame's value) for one metric name."""
    available = sorted({k for frame in tree.walk() for k in frame.metrics})

    def raw(name):
        if name not in available:
            raise ValueError(f"Metric {name} is not found in the profile; it has "
                             f"{', '.join(available)}")
        return lambda frame: frame.metrics.get(name, math.nan)

    nanoseconds = raw(TIME)
    match = _TIME.match(metric)
    if match:
        per_call, unit = match.group(1), match.group(3)

        def value(frame):
            if per_call:
                calls = frame.metrics.get("count") or math.nan
                return nanoseconds(frame) / TIME_UNITS[unit] / calls
            return nanoseconds(frame) / TIME_UNITS[unit]
        return f"{metric} (host)", value
    match = _RATE.match(metric)
    if match:
        prefix, what, width = match.groups()
        amount = raw(("flops" if what == "flop" else "bytes") + width)

        def value(frame):
            seconds = nanoseconds(frame) * 1e-9 or math.nan
            return amount(frame) / seconds / RATE_PREFIXES[prefix]
        return f"{metric} (host)", value
    if metric == "util":
        raise ValueError("Metric util needs GPU peak rates and GPU kernel times; minitriton's "
                         "profiles hold host times only: ask for tflop/s or gbyte/s")
    return metric, raw(metric)


def _keep(frame, include, exclude, threshold, first, inside):
    """The frame with the children the filters keep; None to drop it."""
    if exclude and re.search(exclude, frame.name):
        return None
    inside = inside or not include or re.search(include, frame.name) is not None
    children = [c for c in (_keep(c, include, exclude, threshold, first, inside)
                            for c in frame.children) if c is not None]
    if not (inside or children):
        return None
    if threshold is not None and not frame.values[first] >= threshold:
        return None
    return Frame(frame.name, frame.kind, frame.metrics, children, frame.values)


def parse(metrics, filename, include=None, exclude=None, threshold=None):
    """(the tree, its column names) for `metrics` from a profile. include and exclude are
    regular expressions on frame names: include keeps the paths through a match, exclude drops
    a match and its children; threshold drops frames whose first metric is below it."""
    tree = read(filename)
    columns = []
    for metric in metrics or ["time/ms"]:
        name, value = _column(tree, metric.lower())
        for frame in tree.walk():
            frame.values[name] = value(frame)
        columns.append(name)
    tree.children = [c for c in (_keep(c, include, exclude, threshold, columns[0], False)
                                 for c in tree.children) if c is not None]
    return tree, columns


def _cell(value):
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3f}"
    return "" if value is None else str(value)


def _rows(frame, depth, prefix="", last=True, level=0):
    """(frame, its name drawn in the tree) down to `depth` levels below the root."""
    yield frame, (prefix + ("└─ " if last else "├─ ") if level else "") + frame.name
    if level == depth:
        return
    inner = prefix + ("   " if last else "│  ") if level else ""
    for i, child in enumerate(frame.children):
        yield from _rows(child, depth, inner, i == len(frame.children) - 1, level + 1)


def print_tree(tree, metrics, depth=100, format=None, print_sorted=False):
    """Print the tree as a table: one column per metric, then the frames' names as a tree.
    `format` is accepted for Proton's signature: scope names hold no file or line to cut."""
    rows = [([_cell(frame.values.get(m)) for m in metrics], label)
            for frame, label in _rows(tree, depth)]
    widths = [max([len(m)] + [len(cells[i]) for cells, _ in rows])
              for i, m in enumerate(metrics)]
    print(f"minitriton profile: {tree.note.get('clock', 'host wall time')}")
    print("  ".join(m.rjust(w) for m, w in zip(metrics, widths)) + "  name")
    for cells, label in rows:
        print("  ".join(c.rjust(w) for c, w in zip(cells, widths)) + "  " + label)
    if print_sorted:
        print(f"Sorted frames by {metrics[0]}")
        frames = sorted((f for f in tree.walk() if f is not tree),
                        key=lambda f: -(f.values.get(metrics[0]) or 0))
        for frame in frames:
            print(f"{frame.name[:100]:105} {_cell(frame.values.get(metrics[0]))}")
