"""Export of benchmark rows: CSV and JSON files with the device, versions and date, and the
results ledger.

The ledger (`docs/results/ledger.csv`) is one append-only CSV that keeps every GPU measurement
the docs cite, one row per (op, shape, dtype, implementation) of one run, with fixed columns:

    run             label shared by every row of one invocation (default: its UTC start time)
    op, shape, dtype, implementation
    median_ms, p20_ms, p80_ms   the timer's median and 20th/80th percentiles (empty if unknown)
    graph_ms        median of CUDA-graph replays: the GPU's time without Python launch overhead
    rate, unit      work / median_ms, e.g. GB/s (bytes moved) or TFLOP/s (2*M*N*K)
    gpu, torch, triton, date, commit    where, with what, when, and which code was measured
    note            free text: the command, how it was timed, anything a reader must know

Rows are only ever appended; a run never rewrites an earlier one, so a doc that cites
`run=...` keeps pointing at the same figures. Ratios against an alternative are not stored:
they are computed from two rows of the same run (benchmarks/ledger_report.py).
"""
from __future__ import annotations

import csv
import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

LEDGER_COLUMNS = ("run", "op", "shape", "dtype", "implementation", "median_ms", "p20_ms",
                  "p80_ms", "graph_ms", "rate", "unit", "gpu", "torch", "triton", "date",
                  "commit", "note")
_NUMERIC = ("median_ms", "p20_ms", "p80_ms", "graph_ms", "rate")
_META = ("run", "gpu", "torch", "triton", "date", "commit", "note")  # may come from `meta`


def environment(device=None):
    import torch

    info = {"date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "python": platform.python_version(), "machine": platform.machine(),
            "device": str(device or "")}
    if device is not None and torch.device(device).type == "cuda":
        info["device_name"] = torch.cuda.get_device_name(torch.device(device))
    else:
        info["device_name"] = platform.processor() or platform.machine()
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError:
        pass
    return info


def git_commit(cwd=None):
    """The checkout's short commit (`git rev-parse --short HEAD`), "+dirty" when the tree has
    changes, or "unknown" outside a checkout. `TRITONLAB_COMMIT` overrides it: a copy of the
    tree on another machine (the lent GPU) may carry no, or a stale, .git."""
    if os.environ.get("TRITONLAB_COMMIT"):
        return os.environ["TRITONLAB_COMMIT"]
    where = cwd or Path(__file__).parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=where, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=where, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0 or not head.stdout.strip():
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def run_label():
    """A label for a new run: its UTC start time, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path, rows, meta):
    Path(path).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def read_json(path):
    data = json.loads(Path(path).read_text())
    return data["rows"], data["meta"]


def meta_path(csv_path):
    """The sidecar that holds a CSV's metadata: results/x.csv -> results/x.meta.json."""
    csv_path = Path(csv_path)
    return csv_path.with_name(f"{csv_path.stem}.meta.json")


def write_csv(path, rows, meta):
    """Rows as a plain CSV (its header is the first line, for csv.DictReader, pandas and
    spreadsheets alike); the metadata goes in the sidecar `meta_path(path)`, as JSON."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    meta_path(path).write_text(json.dumps(meta, indent=1))


def read_csv(path):
    """(rows, meta) of a file from write_csv: numbers parsed, meta from the sidecar ({} if it is
    missing). Files of the older layout, with `# key: value` lines first, read as well."""
    meta, lines = {}, []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("# "):
                key, _, value = line[2:].rstrip("\n").partition(": ")
                meta[key] = value
            else:
                lines.append(line)
    sidecar = meta_path(path)
    if sidecar.exists():
        meta.update(json.loads(sidecar.read_text()))
    rows = []
    for row in csv.DictReader(lines):
        rows.append({k: _parse(v) for k, v in row.items()})
    return rows, meta


def _parse(value):
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    if value in ("True", "False"):
        return value == "True"
    return value


def _ledger_cell(column, value):
    if value is None or (isinstance(value, float) and value != value):  # missing or NaN
        return ""
    if column in _NUMERIC:
        return f"{float(value):.8g}"
    return str(value)


def _check_header(path, who):
    with open(path, newline="") as f:
        header = tuple(next(csv.reader(f), ()))
    if header != LEDGER_COLUMNS:
        raise ValueError(f"{who}: {path} has columns {list(header)}, not the ledger's "
                         f"{list(LEDGER_COLUMNS)}; write to a new file or migrate this one")


def append_ledger(path, rows, meta):
    """Append `rows` (dicts with the per-row columns) to the ledger at `path`, creating it with
    its header. `meta` supplies run, gpu, torch, triton, date, commit and note for rows that do
    not carry their own; run defaults to the current UTC time, date to today, commit to the
    checkout's. Refuses a file whose header is not LEDGER_COLUMNS, or unknown columns."""
    path = Path(path)
    meta = {"run": run_label(), "date": datetime.date.today().isoformat(),
            "commit": git_commit(), **meta}
    new = not path.exists() or not path.stat().st_size
    if new:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        _check_header(path, "append_ledger")
    out = []
    for row in rows:
        unknown = set(row) - set(LEDGER_COLUMNS)
        if unknown:
            raise ValueError(f"append_ledger: unknown columns {sorted(unknown)}")
        full = {c: row.get(c, meta.get(c) if c in _META else None) for c in LEDGER_COLUMNS}
        out.append({c: _ledger_cell(c, v) for c, v in full.items()})
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=LEDGER_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerows(out)
    return len(out)


def read_ledger(path, **filters):
    """The ledger's rows (numeric columns as floats, None where empty) that match every
    filter: `column=value`, or `column=(value, value, ...)` for any of several values."""
    for column in filters:
        if column not in LEDGER_COLUMNS:
            raise ValueError(f"read_ledger: no column {column!r}; columns are "
                             f"{list(LEDGER_COLUMNS)}")
    wanted = {c: {str(v) for v in (w if isinstance(w, (tuple, list, set)) else (w,))}
              for c, w in filters.items()}
    _check_header(path, "read_ledger")
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if all(row[c] in values for c, values in wanted.items()):
                rows.append({c: (float(v) if v else None) if c in _NUMERIC else v
                             for c, v in row.items()})
    return rows
