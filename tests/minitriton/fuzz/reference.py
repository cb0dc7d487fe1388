"""A NumPy reference for the integer element-wise cases, where an exact one is easy.

Integer and boolean arithmetic has one right answer (two's-complement wrap-around, C division),
so the generator's expression tree can be evaluated directly in NumPy, independently of
minitriton, and compared bit for bit. `evaluate` returns None for trees it does not cover
(anything with a float in it).
"""
from __future__ import annotations

import numpy as np

from .data import logical, make_input, make_output
from .gen import PROGRAMS
from .types import BOOL, FLOAT, TYPES


class Unsupported(Exception):
    pass


def _c_div(x, y):
    q = np.floor_divide(x, y)
    fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return np.where(fix, q + 1, q).astype(x.dtype)


def _as(v, ty):
    """A value (array or Python literal) as type `ty`."""
    if isinstance(v, np.ndarray):
        if ty.kind == BOOL:
            return v if v.dtype == np.bool_ else v != 0
        return v.astype(ty.np)
    if ty.kind == BOOL:
        return np.bool_(v)
    if isinstance(v, float):
        raise Unsupported("float literal")
    m = int(v) % (1 << ty.bits)  # a literal wraps into the type, as the cast would
    if ty.signed and m >= 1 << (ty.bits - 1):
        m -= 1 << ty.bits
    return np.array(m, dtype=ty.np)


class Evaluator:
    def __init__(self, case, shape):
        self.case = case
        self.shape = shape
        self.inputs = {i.name: make_input(i) for i in case.inputs}
        self.types = {i.name: TYPES[i.ty] for i in case.inputs}
        rank = len(shape)
        p = np.arange(PROGRAMS).reshape((PROGRAMS,) + (1,) * rank)
        if rank == 1:
            self.index = {"o": (p * shape[0] + np.arange(shape[0])).astype(np.int32)}
        else:
            m, n = shape
            r = np.arange(m).reshape(1, m, 1)
            c = np.arange(n).reshape(1, 1, n)
            self.index = {"o": (p * m * n + r * n + c).astype(np.int32),
                          "r": np.broadcast_to(r, (PROGRAMS, m, 1)).astype(np.int32),
                          "c": np.broadcast_to(c, (PROGRAMS, 1, n)).astype(np.int32)}

    def leaf_array(self, buf, where):
        ty = self.types[buf]
        a = logical(self.inputs[buf], ty.name)
        if ty.kind == BOOL:
            a = a != 0
        if len(self.shape) == 1:
            return a.reshape(PROGRAMS, self.shape[0])
        m, n = self.shape
        return a.reshape({"full": (PROGRAMS, m, n), "row": (PROGRAMS, 1, n),
                          "col": (PROGRAMS, m, 1)}[where])

    def ev(self, node):
        op, k = node.op, node.kids
        if node.ty.kind == FLOAT:
            raise Unsupported(op)
        if op == "lit":
            return node.value
        if op == "index":
            return self.index[node.arg]
        if op == "scalar":
            return _as(self.inputs[node.arg], node.ty)
        if op == "full":
            return np.full((1,) + tuple(node.shape), node.arg, dtype=node.ty.np) \
                if node.ty.kind != BOOL else np.full((1,) + tuple(node.shape), bool(node.arg))
        if op == "load":
            buf, where, other = node.arg
            a = self.leaf_array(buf, where)
            if k and other is not None:  # masked, with `other` (converted as the pointer's type)
                cont = TYPES[self.types[buf].name].container
                o = np.array(int(other)).astype(cont.np)
                o = logical(o.reshape(1), node.ty.name)[0] if node.ty.kind != BOOL else o != 0
                a = np.where(self.ev(k[0]), a, o)
            return a
        if op == "var":
            return self.ev(k[0])
        if op in ("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "<", "<=", ">", ">=",
                  "==", "!="):
            ct = node.arg
            x, y = _as(self.ev(k[0]), ct), _as(self.ev(k[1]), ct)
            with np.errstate(all="ignore"):
                if op == "//":
                    return _c_div(x, y) if ct.signed else (x // y).astype(ct.np)
                if op == "%":
                    if not ct.signed:
                        return (x % y).astype(ct.np)
                    return (x - _c_div(x, y) * y).astype(ct.np)
                fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and,
                      "|": np.bitwise_or, "^": np.bitwise_xor, "<<": np.left_shift,
                      ">>": np.right_shift, "<": np.less, "<=": np.less_equal,
                      ">": np.greater, ">=": np.greater_equal, "==": np.equal,
                      "!=": np.not_equal}[op]
                if op == ">>" and k[0].ty.signed and not ct.signed:
                    # Triton shifts arithmetically when the left operand is signed
                    signed = np.dtype(ct.np.str.replace("u", "i"))
                    return (x.view(signed) >> y.astype(signed)).view(ct.np)
                if ct.kind == BOOL and op in ("&", "|", "^"):
                    fn = {"&": np.logical_and, "|": np.logical_or, "^": np.logical_xor}[op]
                out = fn(x, y)
                return out if op in ("<", "<=", ">", ">=", "==", "!=") else out.astype(ct.np)
        if op == "where":
            c = self.ev(k[0])
            return np.where(c, _as(self.ev(k[1]), node.ty), _as(self.ev(k[2]), node.ty))
        if op in ("maximum", "minimum"):
            x, y = _as(self.ev(k[0]), node.ty), _as(self.ev(k[1]), node.ty)
            return (np.maximum if op == "maximum" else np.minimum)(x, y)
        if op == "neg":
            with np.errstate(all="ignore"):
                return (np.zeros((), node.ty.np) - _as(self.ev(k[0]), node.ty)).astype(node.ty.np)
        if op == "abs":
            x = _as(self.ev(k[0]), node.ty)
            with np.errstate(all="ignore"):
                return x if not node.ty.signed else np.abs(x).astype(node.ty.np)
        if op == "invert":
            x = _as(self.ev(k[0]), node.ty)
            return np.logical_not(x) if node.ty.kind == BOOL else np.invert(x)
        if op == "cast":
            src = k[0]
            if src.ty.kind == FLOAT:
                raise Unsupported("float source")
            return _as(self.ev(src), node.ty)
        if op == "bitcast":
            x = _as(self.ev(k[0]), k[0].ty)
            return np.ascontiguousarray(x).view(node.ty.np)
        raise Unsupported(op)


def evaluate(case):
    """The expected outputs (container dtype) of an integer element-wise case, or None."""
    if case.ref is None:
        return None
    root, mask, shape = case.ref
    ev = Evaluator(case, shape)
    try:
        value = ev.ev(root)
        keep = ev.ev(mask) if mask is not None else None
    except Unsupported:
        return None
    out = case.outputs[0]
    ty = TYPES[out.ty]
    full = np.broadcast_to(_as(value, ty), (PROGRAMS,) + tuple(shape))
    if ty.kind == BOOL:
        full = full.astype(np.int8)
    else:
        full = np.ascontiguousarray(full).view(ty.container.np) if ty.container != ty else full
    expected = make_output(out).reshape((PROGRAMS,) + tuple(shape))
    if keep is not None:
        keep = np.broadcast_to(keep, expected.shape)
        expected[keep] = full[keep]
    else:
        expected[...] = full
    return {out.name: expected.reshape(-1)}
