#!/usr/bin/env sh
# On the lent GPU machine (no network): install, from wheels carried in .whl/, the test
# packages its python3 lacks, into /tmp/site. Usage: . scripts/device_prepare.sh
# (Download the wheels here first: see docs/gpu.md.)
need=""
python3 -c "import pytest" 2>/dev/null || need="$need pytest iniconfig pluggy packaging pygments"
python3 -c "import hypothesis" 2>/dev/null || need="$need hypothesis sortedcontainers"
python3 -c "import ml_dtypes" 2>/dev/null || need="$need ml_dtypes"
if [ -n "$need" ]; then
    files=""
    for n in $need; do files="$files $(ls .whl/${n}-*.whl)"; done
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $files
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
# Liger-Kernel, the alternative issue 17 compares with (benchmarks/kernels.py adds its rows
# where it imports): optional, from .whl/ when carried there
if ! python3 -c "import liger_kernel" 2>/dev/null && ls .whl/liger_kernel-*.whl >/dev/null 2>&1
then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        .whl/liger_kernel-*.whl
    case ":$PYTHONPATH:" in
        *:/tmp/site:*) ;;
        *) export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" ;;
    esac
    need="$need liger_kernel"
fi
echo "device: installed [${need# }]"
