#!/usr/bin/env sh
# Prints the Python interpreter to use, preparing it first if needed.
# - If the system python3 already has torch, numpy, ml_dtypes, pytest and hypothesis (a GPU
#   machine with its own stack, no network), it is used as it is, with src/ on PYTHONPATH.
# - Otherwise a virtual environment .venv is made once: torch==2.13.0 (the CPU build that this
#   project's machines keep on disk; a plain `torch` would pull a multi-GB CUDA build), then
#   this package in editable mode with its test extras.
set -e
cd "$(dirname "$0")/.."
if [ -z "$TRITONLAB_VENV" ] && python3 -c "import torch, numpy, ml_dtypes, pytest, hypothesis" >/dev/null 2>&1; then
    echo "env PYTHONPATH=$(pwd)/src${PYTHONPATH:+:$PYTHONPATH} python3"
    exit 0
fi
VENV="${TRITONLAB_VENV:-.venv}"
if [ ! -f "$VENV/.ready" ]; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2
    "$VENV/bin/python" -m pip install -q "torch==2.13.0" >&2
    "$VENV/bin/python" -m pip install -q -e ".[test]" >&2
    touch "$VENV/.ready"
fi
echo "$(pwd)/$VENV/bin/python"
