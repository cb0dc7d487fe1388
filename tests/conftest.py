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


@pytest.fixture(params=["lockstep", "sequential"])
def executor(request):
    """The test runs under both minitriton executors (ask for it where the executor matters)."""
    import minitriton
    with minitriton.configure(executor=request.param):
        yield request.param


try:
    from hypothesis import HealthCheck, settings as _hyp_settings
    _hyp_settings.register_profile(
        "tritonlab", suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
    _hyp_settings.load_profile("tritonlab")
except ImportError:  # pragma: no cover
    pass
