"""Benchmarking done right (lecture §2): `benchmark`, `compare`, `sweep`, the pitfalls, export."""
from .compare import Comparison, Sweep, compare, sweep
from .export import environment, read_csv, read_json, write_csv, write_json
from .pitfalls import EXERCISE_1, Pitfall, first_run, item_in_loop, no_sync
from .timing import BenchResult, benchmark, default_device, quantile, synchronizer

__all__ = ["benchmark", "BenchResult", "compare", "Comparison", "sweep", "Sweep", "quantile",
           "default_device", "synchronizer", "first_run", "no_sync", "item_in_loop", "Pitfall",
           "EXERCISE_1", "environment", "read_csv", "read_json", "write_csv", "write_json"]
