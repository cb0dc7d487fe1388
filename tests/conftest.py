import os

import pytest


def _gpu_available():
    try:
        import torch
        import triton  # noqa: F401
        return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
    except Exception:
        return False


GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    if GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and triton (run `make test` on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
