# The two set-up commands of the README. Each prepares its Python first (scripts/env.sh).
PY = $(shell scripts/env.sh)

.PHONY: demo test
demo:  ## run the lecture demos (simulator here, real Triton where a CUDA GPU is)
	$(PY) -m tritonlab lecture all

test:  ## run the test suite (GPU tests run only where a CUDA GPU and triton are present)
	$(PY) -m pytest $(PYTEST_ARGS)
