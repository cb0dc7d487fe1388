"""An error leaves a launch with the user's frames: the kernel's lines and the caller's code,
not minitriton's executors, language functions and memory (source.user_frames). Only the
launch entry (`kernel[grid]`'s call into runtime/launch.py) may stay; the errors chained to it
(`__cause__`) are trimmed too; MINITRITON_FULL_TRACEBACK=1 keeps every frame."""
import json
import os
import traceback

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import CompilationError, LaunchError, OutOfBoundsError, Settings
from minitriton.source import FULL_TRACEBACK_VARIABLE, KERNEL_CODES

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(triton.__file__)), "")
# the calls from `kernel[grid](...)` into the launch: KernelInterface's lambda and
# JITFunction.run (runtime/jit.py), and launch (runtime/launch.py), where the error leaves
ENTRY = {("jit.py", "<lambda>"), ("jit.py", "run"), ("launch.py", "launch")}


@triton.jit
def unmasked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # out of bounds: no mask
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def mismatched_add(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.load(x_ptr + tl.arange(0, 2 * BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), x + y)  # incompatible shapes


@triton.jit
def no_such_method(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x.no_such_method())  # AttributeError


def _line_of(kernel, text):
    lines, first = kernel.fn.__code__.co_filename, kernel.fn.__code__.co_firstlineno
    with open(lines) as f:
        source = f.read().splitlines()
    return next(i + 1 for i in range(first - 1, len(source)) if text in source[i])


def frames(error):
    """(file, function, line, is a kernel frame) of each frame of the error's traceback."""
    return [(frame.f_code.co_filename, frame.f_code.co_name, line,
             frame.f_code in KERNEL_CODES)
            for frame, line in traceback.walk_tb(error.__traceback__)]


def minitriton_frames(error):
    return [(os.path.basename(f), name) for f, name, _, kernel in frames(error)
            if f.startswith(PACKAGE) and not kernel]


def assert_user_frames(error, kernel, text):
    """Only the launch entry is minitriton's, and the kernel's line that failed is there."""
    assert set(minitriton_frames(error)) <= ENTRY, minitriton_frames(error)
    seen = frames(error)
    kernel_lines = [line for f, name, line, is_kernel in seen if is_kernel]
    assert kernel_lines[-1] == _line_of(kernel, text)
    first_kernel = next(i for i, f in enumerate(seen) if f[3])
    assert all(not f.startswith(PACKAGE) for f, *_ in seen[first_kernel:])
    assert seen[0][0] == __file__  # the traceback begins at the caller's line


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
def test_an_out_of_bounds_load_shows_the_callers_and_the_kernels_lines(executor):
    x, out = np.zeros(100, np.float32), np.zeros(100, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        unmasked_copy[(2,)](x, out, 100, BLOCK=64, minitriton_settings=Settings(executor=executor))
    assert_user_frames(info.value, unmasked_copy, "x = tl.load(x_ptr + offs)")
    assert "x = tl.load(x_ptr + offs)" in str(info.value)  # the message still names the line


def test_a_shape_error_and_its_cause_show_the_kernels_line():
    with pytest.raises(CompilationError, match="incompatible dimensions") as info:
        mismatched_add[(1,)](np.zeros(64, np.float32), np.zeros(32, np.float32), BLOCK=32)
    assert_user_frames(info.value, mismatched_add, "x + y")
    cause = info.value.__cause__
    assert isinstance(cause, ValueError)  # as Triton chains the language's error
    assert not [f for f in minitriton_frames(cause) if f not in ENTRY]


def test_a_python_error_in_a_kernel_line_chains_a_trimmed_cause():
    with pytest.raises(CompilationError, match="no_such_method") as info:
        no_such_method[(1,)](np.zeros(16, np.float32), BLOCK=16)
    assert isinstance(info.value, AttributeError)
    assert_user_frames(info.value, no_such_method, "x.no_such_method()")
    cause = info.value.__cause__
    assert isinstance(cause, AttributeError) and not isinstance(cause, CompilationError)
    assert minitriton_frames(cause) == []  # raised in minitriton: only the kernel's line kept
    assert [line for *_, line, kernel in frames(cause) if kernel] == \
        [_line_of(no_such_method, "x.no_such_method()")]


def test_a_launch_error_keeps_the_entry_alone():
    with pytest.raises(LaunchError, match="missing a required argument") as info:
        unmasked_copy[(1,)](np.zeros(4, np.float32), np.zeros(4, np.float32), BLOCK=4)
    assert set(minitriton_frames(info.value)) <= ENTRY
    assert not any(kernel for *_, kernel in frames(info.value))


def test_warmup_errors_are_trimmed_too():
    with pytest.raises(CompilationError) as info:
        mismatched_add.warmup(np.zeros(64, np.float32), np.zeros(32, np.float32), BLOCK=32,
                              grid=(1,))
    allowed = ENTRY | {("jit.py", "warmup"), ("launch.py", "warmup")}
    assert set(minitriton_frames(info.value)) <= allowed, minitriton_frames(info.value)


def test_the_users_own_error_under_the_launch_is_left_alone():
    """A launch made while the caller handles its own error: that error (the failure's
    __context__) keeps the standard library's frames it was raised through."""
    try:
        json.loads("{")
    except ValueError:
        with pytest.raises(OutOfBoundsError) as info:
            unmasked_copy[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32), 8, BLOCK=16)
    context = info.value.__context__
    assert isinstance(context, json.JSONDecodeError)
    assert any(os.path.join("json", "") in f for f, *_ in frames(context))


def test_full_traceback_keeps_minitritons_frames(monkeypatch):
    monkeypatch.setenv(FULL_TRACEBACK_VARIABLE, "1")
    with pytest.raises(OutOfBoundsError) as info:
        unmasked_copy[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32), 8, BLOCK=16)
    names = minitriton_frames(info.value)
    assert ("executors.py", "run_lockstep") in names and ("memory.py", "resolve") in names
    assert names.count(("launch.py", "launch")) == 1  # the launch frame once, not again
