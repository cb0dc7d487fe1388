"""`gluon.jit`: a Gluon kernel runs through minitriton's jit (runtime/jit.py) like a `tl` one;
only the language it calls differs."""
from __future__ import annotations

from ...runtime.jit import JITFunction


class GluonJITFunction(JITFunction):
    def is_gluon(self):
        return True


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
        do_not_specialize_on_alignment=(), debug=None, noinline=None):
    """Decorator: `@gluon.jit`."""
    def decorate(f):
        return GluonJITFunction(f, debug=debug, do_not_specialize=do_not_specialize,
                                noinline=noinline, repr=repr)
    return decorate(fn) if fn is not None else decorate


def constexpr_function(fn):
    """A host function a kernel may call on constexpr arguments (its result a constexpr):
    minitriton runs it as it is."""
    fn.__triton_builtin__ = True
    return fn


def must_use_result(x, s=True):
    return x
