"""Where in the user's kernel source something happened.

`@jit` re-compiles kernel source keeping its file name and line numbers and registers the code
objects here; errors and sanitizer reports find the kernel line by looking for those code
objects on the stack or in a traceback.

`user_frames(error)` trims what an error carries out of a launch to the user's frames: the
kernel's lines and the user's code stay, minitriton's own frames (executors, language
functions, memory) and the standard library's under them go, in the error and in the errors
chained to it (`__cause__`, `__context__`). As Triton's interpreter does: a traceback reads
as the program, and pytest, which parses the whole file of each frame it shows, reports a
failing test at a fraction of what the internal frames cost (198 failing launches: 31-35 s
before, 10-11 s after, 4.5 s for the same tests passing). MINITRITON_FULL_TRACEBACK=1 keeps
every frame, for minitriton's developers.
"""
from __future__ import annotations

import linecache
import os
import sys
import sysconfig
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


def kernel_frame(depth=2):
    """The innermost kernel frame on the stack (from `depth` frames up), or None."""
    frame = sys._getframe(depth)
    while frame is not None:
        if frame.f_code in KERNEL_CODES:
            return frame
        frame = frame.f_back
    return None


def kernel_site():
    """(file, line) of the innermost kernel frame on the stack; ("<kernel>", 0) outside one."""
    frame = kernel_frame()
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<kernel>", 0)


def kernel_location(depth=2):
    """'file:line: source' of the innermost kernel frame calling us (`depth` frames up)."""
    frame = kernel_frame(depth + 1)
    if frame is None:
        return "<unknown line>"
    src = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}: {src}"


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


FULL_TRACEBACK_VARIABLE = "MINITRITON_FULL_TRACEBACK"
_PACKAGE = os.path.join(os.path.normcase(os.path.dirname(os.path.abspath(__file__))), "")
_STDLIB = tuple(dict.fromkeys(
    os.path.join(os.path.normcase(os.path.abspath(sysconfig.get_paths()[key])), "")
    for key in ("stdlib", "platstdlib")))
_INTERNAL_FILES: dict = {}  # co_filename -> _internal_file's answer


def _internal_file(filename):
    """Whose a code file is: "minitriton", "stdlib", or None (the user's, or a library's)."""
    if filename not in _INTERNAL_FILES:
        path = os.path.normcase(os.path.abspath(filename))
        if path.startswith(_PACKAGE):
            internal = "minitriton"
        elif filename.startswith("<frozen ") or path.startswith(_STDLIB) and not any(
                part in ("site-packages", "dist-packages") for part in path.split(os.sep)):
            internal = "stdlib"
        else:
            internal = None
        _INTERNAL_FILES[filename] = internal
    return _INTERNAL_FILES[filename]


def internal_frame(code):
    """Whether a frame of `code` is minitriton's machinery (or the standard library's under it),
    not the user's: a kernel's code is always the user's, wherever its file is."""
    return code not in KERNEL_CODES and _internal_file(code.co_filename) is not None


def full_traceback(environ=os.environ):
    """MINITRITON_FULL_TRACEBACK=1: errors keep minitriton's frames."""
    return environ.get(FULL_TRACEBACK_VARIABLE, "").strip().lower() not in ("", "0", "false",
                                                                            "no", "off")


def _without_internals(tb):
    """The traceback `tb` with minitriton's frames left out (new traceback objects)."""
    kept = [t for t in _walk(tb) if not internal_frame(t.tb_frame.f_code)]
    tb = None
    for t in reversed(kept):
        tb = types.TracebackType(tb, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return tb


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def user_frames(error):
    """`error`, about to be raised again from the launch frame that caught it, with its
    traceback (and those of the errors chained to it) trimmed to the user's frames; returns
    `error`. Its traceback begins at that launch frame, which the new `raise` adds again: it
    goes in any case."""
    if error.__traceback__ is not None:
        error.__traceback__ = error.__traceback__.tb_next
    if full_traceback():
        return error
    seen = set()
    todo = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        frames = [t.tb_frame.f_code for t in _walk(e.__traceback__)]
        if e is not error and not any(code not in KERNEL_CODES and _internal_file(
                code.co_filename) == "minitriton" for code in frames):
            continue  # not raised in minitriton (the user's error the launch was made under)
        if e.__traceback__ is not None:
            e.__traceback__ = _without_internals(e.__traceback__)
        todo += [e.__cause__, e.__context__]
    return error
