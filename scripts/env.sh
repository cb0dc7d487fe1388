#!/usr/bin/env sh
# Prints the Python interpreter to use, preparing it first if needed.
# - If the system python3 already has torch, numpy, ml_dtypes, pytest and hypothesis (a GPU
#   machine with its own stack, no network), it is used as it is, with both packages' source
#   folders on PYTHONPATH.
# - Otherwise a virtual environment .venv is made: torch==2.13.0 (the CPU build that this
#   project's machines keep on disk; a plain `torch` would pull a multi-GB CUDA build), then
#   minitriton (packages/minitriton, with its `fast` extra: numba) and tritonlab in editable
#   mode with the test extras. It is made again when a pyproject.toml changes (the stamp
#   .venv/.ready holds their checksum).
set -e
cd "$(dirname "$0")/.."
if [ -z "$TRITONLAB_VENV" ] && python3 -c "import torch, numpy, ml_dtypes, pytest, hypothesis" >/dev/null 2>&1; then
    echo "env PYTHONPATH=$(pwd)/src:$(pwd)/packages/minitriton/src${PYTHONPATH:+:$PYTHONPATH} python3"
    exit 0
fi
VENV="${TRITONLAB_VENV:-.venv}"
STAMP="$(cat pyproject.toml packages/minitriton/pyproject.toml | cksum)"
if [ ! -f "$VENV/.ready" ] || [ "$(cat "$VENV/.ready")" != "$STAMP" ]; then
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2
    "$VENV/bin/python" -m pip install -q "torch==2.13.0" >&2
    "$VENV/bin/python" -m pip install -q -e "packages/minitriton[fast]" >&2
    "$VENV/bin/python" -m pip install -q -e ".[test]" >&2
    echo "$STAMP" > "$VENV/.ready"
fi
echo "$(pwd)/$VENV/bin/python"
