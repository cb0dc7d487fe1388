# The two set-up commands of the README. Each prepares its Python first (scripts/env.sh).
.PHONY: demo test wheels test-minitriton compile-check
demo:  ## run the lecture demos (simulator here, real Triton where a CUDA GPU is)
	PY="$$(scripts/env.sh)" && $$PY -m tritonlab lecture all

test:  ## run the test suite (GPU tests run only where a CUDA GPU and triton are present)
	PY="$$(scripts/env.sh)" && $$PY -m pytest $(PYTEST_ARGS)

wheels:  ## build both distributions' wheels into dist/
	PY="$$(scripts/env.sh)" && rm -rf dist && $$PY -m pip wheel -q --no-deps -w dist packages/minitriton .

# minitriton on its own: its wheel in a fresh environment with only numpy, ml_dtypes, pytest
# and hypothesis (no torch, no tritonlab), running tests/minitriton against the installed wheel
MT_VENV = .venv-minitriton
test-minitriton: wheels
	rm -rf $(MT_VENV) && python3 -m venv $(MT_VENV)
	$(MT_VENV)/bin/python -m pip install -q dist/minitriton-*.whl pytest hypothesis
	$(MT_VENV)/bin/python -c "import importlib.util as u, minitriton; assert u.find_spec('torch') is None and u.find_spec('tritonlab') is None; assert 'site-packages' in minitriton.__file__, minitriton.__file__"
	$(MT_VENV)/bin/python -m pytest -p no:cacheprovider tests/minitriton $(PYTEST_ARGS)

# Real Triton's compiler on the CPU (no GPU): every configuration the Hopper autotuners may try
# (16-bit, none spilling over 512 B a thread: docs/attention.md#tiles-and-tuning) and
# benchmarks/kernels.py's launches, compiled for sm_90 (docs/gpu.md "Before the GPU"), and no
# pointer-backward loop waiting after every wgmma (probes/sass_loops.py), no pipelined exchange
# whose meeting's steps the compiler reordered (probes/meeting_order.py). Triton's
# Linux wheel goes to TRITON_CPU; where it cannot be installed (no network) the check is skipped.
TRITON_CPU = .triton-cpu
compile-check:
	PY="$$(scripts/env.sh)" && \
	if [ ! -d $(TRITON_CPU)/triton ] && ! $$PY -m pip install -q --no-deps --target $(TRITON_CPU) triton==3.6.0; then \
	    echo "compile-check: Triton's wheel could not be installed; skipped" >&2; exit 0; fi && \
	$$PY benchmarks/compile_check.py --triton $(TRITON_CPU) --configs --dtypes fp16,bf16 --max-spill 512 --quiet && \
	$$PY benchmarks/compile_check.py --triton $(TRITON_CPU) --tuned --shapes --quiet && \
	$$PY benchmarks/compile_check.py --triton $(TRITON_CPU) --tuned --shapes --pdl --quiet && \
	$$PY benchmarks/probes/sass_loops.py --triton $(TRITON_CPU) --dims 16,128 --dtypes bf16 --check \
	    --quiet && \
	$$PY benchmarks/probes/meeting_order.py --triton $(TRITON_CPU) --check --quiet
