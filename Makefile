# The two set-up commands of the README. Each prepares its Python first (scripts/env.sh).
.PHONY: demo test
demo:  ## run the lecture demos (simulator here, real Triton where a CUDA GPU is)
	PY="$$(scripts/env.sh)" && $$PY -m tritonlab lecture all

test:  ## run the test suite (GPU tests run only where a CUDA GPU and triton are present)
	PY="$$(scripts/env.sh)" && $$PY -m pytest $(PYTEST_ARGS)
