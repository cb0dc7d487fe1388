"""Where in the user's kernel source something happened.

`@jit` re-compiles kernel source keeping its file name and line numbers and registers the code
objects here; errors and sanitizer reports find the kernel line by looking for those code
objects on the stack or in a traceback.
"""
from __future__ import annotations

import linecache
import sys
import traceback
import types

from .errors import CompilationError, MiniTritonError

KERNEL_CODES: dict = {}  # code object -> name of the @jit function it belongs to


def register(code, name):
    """Register a kernel's code object and the code objects nested in it."""
    KERNEL_CODES[code] = name
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            register(c, name)


def kernel_location(depth=2):
    """'file:line: source' of the innermost kernel frame calling us (`depth` frames up)."""
    frame = sys._getframe(depth)
    while frame is not None:
        if frame.f_code in KERNEL_CODES:
            src = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return f"{frame.f_code.co_filename}:{frame.f_lineno}: {src}"
        frame = frame.f_back
    return "<unknown line>"


def _where(e, ctx):
    """(program id or None, (file, line, source) of the innermost kernel line or None) of an
    error raised during a launch."""
    location = None
    for frame, summary in zip((f for f, _ in traceback.walk_tb(e.__traceback__)),
                              traceback.extract_tb(e.__traceback__)):
        if frame.f_code in KERNEL_CODES:
            location = (summary.filename, summary.lineno, summary.line or "")
    pid = getattr(e, "failing_pid", None)
    row = getattr(e, "failing_row", None)
    if pid is None and ctx.pids is not None:
        if row is not None and row < len(ctx.pids):
            pid = ctx.pid_tuple(row)
        elif len(ctx.pids) == 1:
            pid = ctx.pid_tuple(0)
    return pid, location


# Python's own errors raised by a kernel line (a wrong argument to a tl function, an attribute a
# tensor lacks, a bad index): Triton raises each as a CompilationError when it compiles that
# line. minitriton raises a CompilationError that is also an instance of the original type.
PYTHON_ERRORS = (TypeError, ValueError, AttributeError, IndexError, KeyError, ZeroDivisionError,
                 OverflowError, NotImplementedError)
_AS_COMPILATION: dict = {}  # Python error type -> its CompilationError class


def as_compilation_error(e, ctx):
    """The CompilationError (located: kernel, program, line; also a `type(e)`, so `except
    TypeError` still catches it) that Triton raises where `e` is a Python error a kernel line
    raised; None for anything else (minitriton's own errors, errors outside kernel code)."""
    if isinstance(e, MiniTritonError) or not isinstance(e, PYTHON_ERRORS):
        return None
    pid, location = _where(e, ctx)
    if location is None:
        return None
    cls = _AS_COMPILATION.get(type(e))
    if cls is None:
        cls = _AS_COMPILATION[type(e)] = type(
            "CompilationError", (CompilationError, type(e)),
            {"__module__": CompilationError.__module__,
             "__doc__": f"A {type(e).__name__} raised by a kernel line, as Triton reports it."})
    err = cls(f"{type(e).__name__}: {e}")
    err.__cause__ = e  # as Triton chains the language's error
    err._locate(ctx.kernel_name, pid, location)
    return err


def locate(e, ctx):
    """Point an error raised during a launch at the innermost kernel line that raised it and
    the program that ran it."""
    pid, location = _where(e, ctx)
    if isinstance(e, MiniTritonError):
        e._locate(ctx.kernel_name, pid, location)
    elif location is not None and hasattr(e, "add_note"):
        e.add_note(f"(in minitriton kernel `{ctx.kernel_name}`, program {pid}, at "
                   f"{location[0]}:{location[1]}: {location[2].strip()})")
