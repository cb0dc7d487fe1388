"""Host memory: the NumPy view of a launch argument (a torch CPU tensor or a NumPy array,
strides kept, no copy), the whole storage it lies in, and the memory that pointers made from
integers reach (`register_memory`, and live torch tensors found once through the garbage
collector). memory.py builds the launch's buffers from them."""
from __future__ import annotations

import functools
import gc
import importlib
import sys
import weakref

import numpy as np

from . import types as _t
from .errors import LaunchError


def byte_address(arr):
    # through a uint8 view: ml_dtypes' float8 type strings break __array_interface__ round trips
    return arr.view(np.uint8).__array_interface__["data"][0] if arr.size else 0


def _torch():
    """torch, if the program imported it (minitriton does not need it)."""
    return sys.modules.get("torch")


def describe(obj):
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        return (f"torch.{str(obj.dtype).replace('torch.', '')} tensor of shape "
                f"{tuple(obj.shape)}, strides {tuple(obj.stride())}")
    return f"numpy {obj.dtype} array of shape {obj.shape}"


def as_numpy(obj, name):
    """A NumPy view (no copy) of a torch CPU tensor or NumPy array, keeping its strides."""
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.device.type != "cpu":
            raise LaunchError(
                f"argument `{name}` is on device `{obj.device}`; minitriton runs kernels on the "
                f"CPU. Move it with `.cpu()`, or run on real Triton (TRITONLAB_BACKEND=triton)")
        t = obj.detach()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(_t.bfloat16.np)
        if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            target = _t.float8e4nv if t.dtype == torch.float8_e4m3fn else _t.float8e5
            return t.view(torch.uint8).numpy().view(target.np)
        try:
            return t.numpy()
        except TypeError as e:
            raise LaunchError(f"argument `{name}`: minitriton cannot map torch dtype {t.dtype} "
                              f"({e})") from None
    if isinstance(obj, np.ndarray):
        return obj
    raise LaunchError(f"argument `{name}` of type {type(obj).__name__} is not a tensor")


def _span(arr):
    """Elements from the first one to the last one the strides can reach."""
    if arr.size == 0:
        return 0
    return 1 + sum((n - 1) * (s // arr.itemsize) for n, s in zip(arr.shape, arr.strides))


def storage_of(obj, arr, span):
    """(flat, start): the whole memory `arr` (the NumPy view of argument `obj`, `span` its
    `flat_span`) lies in, as a 1-D array of its element type, and the offset of `arr`'s first
    element in it; None when that memory is the span itself (an array owning its memory)."""
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        if obj.storage_offset() == 0 and storage.nbytes() == span.nbytes:
            return None
        raw = host_bytes(obj)
    else:
        owner, b = arr, arr.base
        while b is not None:  # NumPy views, and as_strided's DummyArray
            if isinstance(b, np.ndarray):
                owner = b
            b = getattr(b, "base", None)
        if owner is arr or not owner.flags.c_contiguous or owner.size == 0:
            return None
        raw = owner.reshape(-1).view(np.uint8)
        if not arr.flags.writeable:  # a read-only view (np.broadcast_to) stays read-only
            raw = raw.view()
            raw.flags.writeable = False
    offset = byte_address(span) - byte_address(raw)
    item = arr.itemsize
    if not 0 <= offset <= raw.size - span.nbytes:
        return None  # not in that memory after all: keep the view's span
    raw = raw[offset % item:]
    raw = raw[: raw.size - raw.size % item]
    return raw.view(arr.dtype), offset // item


def flat_span(arr, name):
    """The 1-D view from the first element to the last one the strides can reach."""
    if any(s < 0 for s in arr.strides):
        raise LaunchError(f"argument `{name}` has negative strides {arr.strides}; make it "
                          "contiguous first (np.ascontiguousarray / .contiguous())")
    item = arr.itemsize
    if any(s % item for s in arr.strides):
        raise LaunchError(f"argument `{name}` has strides {arr.strides} that are not multiples of "
                          f"its element size {item}")
    span = _span(arr)
    if arr.dtype.type.__module__ == "ml_dtypes":
        # as_strided goes through __array_interface__, whose type string for ml_dtypes'
        # float8_e5m2 ('<f1') NumPy cannot read back: stride the raw bytes and view them again
        raw = _as_strided_span(arr.view(f"u{item}"), span, item)
        return raw.view(arr.dtype)
    return _as_strided_span(arr, span, item)


def _as_strided_span(arr, span, item):
    return np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,),
                                           writeable=arr.flags.writeable)


# host memory that pointers made from integers may point into: storage start -> an object
# owning it (torch tensors found by scanning the garbage collector, arrays given by the user)
_HOST = weakref.WeakValueDictionary()


def register_memory(*arrays):
    """Let kernels reach `arrays` through integer addresses (`.to(tl.pointer_type(...))` of
    a loaded `a.ctypes.data`). Needed for NumPy arrays only: torch tensors are found by
    themselves."""
    for a in arrays:
        if not isinstance(a, np.ndarray) and not hasattr(a, "untyped_storage"):
            raise TypeError(f"register_memory takes NumPy arrays or torch tensors, got "
                            f"{type(a).__name__}")
        if isinstance(a, np.ndarray) and not _outermost(a).flags.c_contiguous:
            raise TypeError("register_memory: the array's memory is not contiguous; register "
                            "a contiguous array (np.ascontiguousarray) and pass views of it")
        start, _ = host_span(a)
        _HOST[start] = a


def host_span(obj):
    """(first byte address, byte count) of the memory `obj` owns: a torch tensor's whole
    storage, a NumPy array's outermost base."""
    if hasattr(obj, "untyped_storage"):
        storage = obj.untyped_storage()
        return storage.data_ptr(), storage.nbytes()
    base = _outermost(obj)
    return byte_address(base) if base.size else 0, base.nbytes


def host_bytes(obj):
    """A writable uint8 NumPy view of all of `obj`'s memory."""
    if hasattr(obj, "untyped_storage"):
        torch = _torch()
        storage = obj.untyped_storage()
        return torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),),
                                                      (1,)).numpy()
    return _outermost(obj).reshape(-1).view(np.uint8)


def _outermost(arr):
    """The array that owns `arr`'s memory (the last NumPy base)."""
    while isinstance(arr.base, np.ndarray) and arr.base.flags.c_contiguous:
        arr = arr.base
    return arr


@functools.lru_cache(maxsize=None)
def _traced_types(torch):
    """The tensor classes tracing leaves alive that hold no memory of their own (FakeTensor,
    FunctionalTensor: their data_ptr() warns or raises), as far as this torch has them."""
    found = []
    for module, name in (("torch._subclasses.fake_tensor", "FakeTensor"),
                         ("torch._subclasses.functional_tensor", "FunctionalTensor")):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            pass
    return tuple(found)


def host_owner(address, scan=True):
    """(start, object) of live host memory holding byte `address`, or None. Unless `scan` is
    false, live torch tensors are searched for it (and remembered) when none known holds it."""
    for start, obj in list(_HOST.items()):
        begin, n = host_span(obj)
        if begin == start and begin <= address < begin + n:
            return start, obj
    torch = _torch()
    if torch is None or not scan:
        return None
    found = None
    traced = _traced_types(torch)
    for obj in gc.get_objects():  # once per address no known memory holds
        if issubclass(type(obj), torch.Tensor) and not isinstance(obj, traced) \
                and obj.device.type == "cpu" and obj.layout == torch.strided:
            try:
                begin, n = host_span(obj)
            except RuntimeError:  # a tensor without storage to read
                continue
            if n:
                _HOST.setdefault(begin, obj)
                if begin <= address < begin + n:
                    found = begin, obj
    return found
