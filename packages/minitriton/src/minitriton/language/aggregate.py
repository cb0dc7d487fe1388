"""`triton.language.core._aggregate`: a class whose instances a kernel builds, passes to and
returns from @jit functions (Gluon's tutorials keep a kernel's state in them).

In Triton the instance is a bundle of IR values; here it is a Python object whose fields are
the annotated names, all set by the constructor (which is a plain or constexpr function) and
no others, as Triton requires. Its @jit methods bind the instance as `self`; called on the
class they are plain @jit functions (a "static" constructor). What Triton checks and this does
not: each field's type against its annotation.
"""
from __future__ import annotations

import functools


class _method:
    """A @jit function in an aggregate: bound to the instance it is read from."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, instance, owner):
        return self.fn if instance is None else functools.partial(self.fn, instance)


def _is_jit(member):
    return any(c.__name__ == "JITFunction" for c in type(member).__mro__)


def _aggregate(cls):
    fields = tuple(getattr(cls, "__annotations__", {}))
    init = cls.__dict__.get("__init__")

    class aggregate_value:
        __triton_builtin__ = True
        __triton_aggregate__ = True

        def __init__(self, *args, **kwargs):
            if init is not None:
                init(self, *args, **kwargs)
            for name in fields:
                if name not in self.__dict__:
                    raise AttributeError(f"constructor for {cls.__name__} did not initialize "
                                         f"attribute '{name}'")

        def __setattr__(self, name, value):
            if name not in fields:
                raise AttributeError(f"{cls.__name__} has no attribute '{name}'")
            object.__setattr__(self, name, value)

        def __repr__(self):
            return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n, None)!r}' for n in fields)})"

    for name, member in vars(cls).items():
        if name.startswith("__") and name.endswith("__"):
            continue
        setattr(aggregate_value, name, _method(member) if _is_jit(member) else member)
    aggregate_value.__name__ = cls.__name__
    aggregate_value.__qualname__ = cls.__qualname__
    aggregate_value.__module__ = cls.__module__
    aggregate_value.__doc__ = cls.__doc__
    aggregate_value.__annotations__ = dict(getattr(cls, "__annotations__", {}))
    return aggregate_value
