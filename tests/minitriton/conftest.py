import pytest


@pytest.fixture(autouse=True)
def _every_executor(executor):
    """minitriton's tests run under both executors."""
    yield
