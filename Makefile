# The two set-up commands of the README. Each prepares its Python first (scripts/env.sh).
.PHONY: demo test wheels test-minitriton
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
