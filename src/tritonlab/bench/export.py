"""CSV and JSON export of benchmark rows, with the device, versions and date."""
from __future__ import annotations

import csv
import datetime
import json
import platform
from pathlib import Path

import torch


def environment(device=None):
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


def write_json(path, rows, meta):
    Path(path).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def read_json(path):
    data = json.loads(Path(path).read_text())
    return data["rows"], data["meta"]


def write_csv(path, rows, meta):
    """Rows as CSV; the metadata goes in leading `# key: value` comment lines."""
    with open(path, "w", newline="") as f:
        for k, v in meta.items():
            f.write(f"# {k}: {v}\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path):
    meta, lines = {}, []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("# "):
                key, _, value = line[2:].rstrip("\n").partition(": ")
                meta[key] = value
            else:
                lines.append(line)
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
