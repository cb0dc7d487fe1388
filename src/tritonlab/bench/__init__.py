"""Benchmarking done right (lecture §2): `benchmark`, `compare`, `sweep`, the pitfalls, export
and the results ledger."""
from .compare import Comparison, Sweep, compare, sweep
from .export import (LEDGER_COLUMNS, append_ledger, environment, git_commit, read_csv, read_json,
                     read_ledger, run_label, write_csv, write_json)
from .pitfalls import EXERCISE_1, Pitfall, first_run, item_in_loop, no_sync
from .timing import (NOISY_SPREAD, BenchResult, benchmark, default_device, noise_warning,
                     quantile, spread, synchronizer)

__all__ = ["benchmark", "BenchResult", "compare", "Comparison", "sweep", "Sweep", "quantile",
           "default_device", "synchronizer", "first_run", "no_sync", "item_in_loop", "Pitfall",
           "EXERCISE_1", "environment", "read_csv", "read_json", "write_csv", "write_json",
           "LEDGER_COLUMNS", "append_ledger", "read_ledger", "git_commit", "run_label",
           "spread", "noise_warning", "NOISY_SPREAD"]
