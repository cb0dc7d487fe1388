"""The observer protocol (minitriton/context.py): what a new check sees of a launch, and that
the lockstep executor's re-runs of diverged programs are undone for it as for memory."""
import re

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import context


@triton.jit
def diverging_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    if pid % 2 == 0:  # programs diverge: lockstep undoes its first attempt and splits them
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)
    else:
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
    acc = tl.dot(tl.zeros([16, 16], tl.float32), tl.zeros([16, 16], tl.float32))
    tl.store(y_ptr + tl.arange(0, 16), tl.sum(acc, axis=1), mask=tl.arange(0, 16) < 0)


@pytest.fixture
def watcher():
    """An observer that logs what it sees, registered for one test only."""
    class Watcher(context.Observer):
        setting = "footprint"  # on with this Settings field, like any check
        seen: list = []

        def __init__(self, ctx):
            super().__init__(ctx)
            self.count = {"on_load": 0, "on_store": 0, "on_dot": 0}

        def on_load(self, access):
            self.count["on_load"] += int(access.count)

        def on_store(self, access):
            self.count["on_store"] += int(access.count)

        def on_dot(self, a, b, flops):
            self.count["on_dot"] += flops

        def mark(self):
            return dict(self.count)

        def undo(self, token):
            self.count = token

        def finish(self, rerun):
            Watcher.seen.append(self.count)
    try:
        yield Watcher
    finally:
        context.OBSERVERS.remove(Watcher)


def test_a_new_observer_sees_every_access_once_under_every_executor(watcher, executor):
    n, block = 1000, 128
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    record = diverging_copy_kernel[(8,)](x, y, n, BLOCK=block,
                                         minitriton_settings=triton.Settings(executor=executor,
                                                                             footprint=True))
    np.testing.assert_array_equal(y, np.where((np.arange(n) // block) % 2 == 0, 2 * x, x))
    (seen,) = watcher.seen
    assert seen == {"on_load": n, "on_store": n, "on_dot": 8 * 2 * 16 ** 3}
    assert (record.args["x_ptr"].loaded, record.args["y_ptr"].stored) == (n, n)
    assert record.args["y_ptr"].unique_written == n


def test_an_observer_is_off_unless_its_setting_is_on(watcher):
    x = np.ones(64, np.float32)
    diverging_copy_kernel[(1,)](x, np.zeros(64, np.float32), 64, BLOCK=64)
    assert watcher.seen == []


def test_every_observer_class_names_a_settings_field():
    fields = set(triton.Settings.__dataclass_fields__)
    assert {c.setting for c in context.OBSERVERS} - {None} <= fields


def test_the_environment_names_every_check_by_its_field():
    s = triton.Settings.from_env({"MINITRITON_SANITIZE": "footprint, races"})
    assert s.footprint and s.races and not s.order
    with pytest.raises(ValueError, match="races, order, padding, footprint"):
        triton.Settings.from_env({"MINITRITON_SANITIZE": "bounds"})


def test_every_variable_the_settings_read_is_watched():
    """current_settings makes the environment's settings again only when a variable of
    _ENV_NAMES changed: every MINITRITON_ variable that from_env reads must be in it."""
    import inspect
    from minitriton import settings
    read = set(re.findall(r'"(MINITRITON_[A-Z_]+)"', inspect.getsource(settings.Settings.from_env)))
    read |= {f"MINITRITON_{n.upper()}" for n in ("strict_globals", "exact_dot")}
    assert read <= set(settings._ENV_NAMES), read - set(settings._ENV_NAMES)
