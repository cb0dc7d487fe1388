"""The types Triton requires of branches and returns (runtime/jit.py asks at each `if`, ternary
and @jit call).

Triton compiles both sides of an `if` or a ternary on a runtime value, and every
`return` of a @jit function, and stops where their types disagree (a `tl.const` pointer is not
a plain one):
  * a name bound by both branches of an `if` gets one type ("Mismatched type for x between
    then block (...) and else block (...)"), a name bound before the `if` keeps its type
    ("initial value for `x` is of type ..., but the then block redefines it as ...");
  * both sides of `a if c else b` ("Ternary expression with dynamic condition has inconsistent
    types ..."), which are made tensors (`1 if c else 2` is an int32);
  * the returned values ("Return type mismatch: ..."); equal constexprs stay a constexpr,
    different ones become tensors (`return 1` / `return 2` give an int32).
minitriton runs one side only, so a `_Probe` looks at both: it evaluates their code on
stand-ins of the values in scope (zero blocks of the same types, one program), running only
what has no effect (arithmetic, shapes, casts, @jit calls; `tl.load` gives its type without
reading) and taking the rest (stores, reductions, dots, loops) as unknown, never an error. An
`if` or ternary is checked when a runtime condition reaches it, once per combination of the
types of the names it reads (a kernel specialisation); a function's returns when it is called,
once per combination of its arguments' types. Not checked: a branch never reached (Triton's
compiler sees it).

Length: over 600 lines because the probe is one evaluator of the kernel language's syntax
(expressions, statements, calls into @jit functions) whose parts share its environment and
its rule for what is unknown; split, they would import each other's private helpers.
"""
from __future__ import annotations

import ast
import functools
import operator

import numpy as np

from .. import language as tl, types as _t
from ..errors import CompilationError
from ..types import _unwrap, constexpr
from . import arith
from .control import _SCALARS, assigned, is_static_range, kernel_max, kernel_min
from .core import _TENSOR_TYPES, cast, constant, is_tensor, tensor, to_int1, to_tensor


# ----- branches and returns: their types must agree

PROBE_LIMIT = 32  # type combinations probed per site; beyond, the site counts as checked
_DEPTH = 8  # nested @jit calls a probe follows


class _Unknown:
    """What the probe could not tell: a value of any type."""

    def __repr__(self):
        return "<unknown>"

    def __bool__(self):
        raise TypeError("unknown")


UNKNOWN = _Unknown()
_MISSING = object()  # a name not bound


class _Found(Exception):
    """A disagreement the probe found: Triton's message."""


def _tensorish(v):
    """A tensor or a block pointer (a tensor of pointer type in Triton)."""
    return getattr(type(v), "_is_mt_tensor", False)


def type_key(v):
    """A hashable summary of what decides `v`'s type: the key of a probe's cache."""
    cls = type(v)
    if cls in _TENSOR_TYPES:
        return v.dtype, tuple(v.shape)
    if cls in _PLAIN:
        return cls, v
    if cls is tuple:
        return tuple(map(type_key, v))
    if isinstance(v, (tensor, _t.dtype)):
        return (v.dtype, tuple(v.shape)) if isinstance(v, tensor) else (cls, v)
    if isinstance(v, np.generic):
        return cls, v.item()
    if _tensorish(v):
        return cls, repr(v.type)
    return cls, id(v)


_PLAIN = frozenset((bool, int, float, str, type(None)))


def _zeros(dtype, shape):
    """A stand-in: a block of `dtype` and `shape` for one program, of zeros."""
    return tensor(np.zeros((1, *shape), np.int64 if dtype.is_ptr() else dtype.np), dtype,
                  list(shape))


def _stand_in(v):
    if is_tensor(v):
        return _zeros(v.dtype, v.shape)
    if type(v) is tuple:
        return tuple(_stand_in(x) for x in v)
    return v


def _is_value(v):
    """A Triton value whose type an `if` keeps: a tensor, a constexpr number or string, a
    tuple of them (not None, a dtype or another Python object)."""
    if _tensorish(v):
        return True
    if type(v) is tuple:
        return all(_is_value(x) for x in v)
    return type(v) in (bool, int, float, str)


def _same_type(a, b):
    if _tensorish(a) or _tensorish(b):
        return _tensorish(a) and _tensorish(b) and a.type == b.type
    if type(a) is tuple or type(b) is tuple:
        return type(a) is type(b) and len(a) == len(b) and all(map(_same_type, a, b))
    return type(a) is type(b) and a == b  # constexprs: their type is their value


def _type_name(ty):
    """A type as Triton 3.6 names it."""
    if isinstance(ty, _t.block_type):
        return f"<{ty.shape}, {_type_name(ty.element_ty)}>"
    if isinstance(ty, _t.pointer_type):
        return f"{'const_pointer' if ty.const else 'pointer'}<{_type_name(ty.element_ty)}>"
    return str(ty)


def _type_of(v):
    """The name of `v.type` as Triton gives it."""
    if _tensorish(v):
        return _type_name(v.type)
    if type(v) is tuple:
        return f"({', '.join(_type_of(x) for x in v)})"
    return f"constexpr_type[{v!r}]"


def _shown(v):
    """`v` as Triton prints a value (`str(tensor)`: fp32[128])."""
    if is_tensor(v):
        return f"{_type_name(v.dtype)}[{', '.join(str(n) for n in v.shape)}]"
    if type(v) is tuple:
        return f"({', '.join(_shown(x) for x in v)})"
    return _type_of(v) if _tensorish(v) else f"constexpr[{v!r}]"


_FIX_BRANCHES = ("\nfix: both sides of a branch on a runtime value are compiled, so they must "
                 "agree: convert one side (`.to(...)`), annotate both pointer parameters alike "
                 "(`tl.const` or not), or branch on a `tl.constexpr` parameter, which compiles "
                 "one side only")


def _names_bound(node):
    """The names a statement (or statements) binds, anywhere inside."""
    nodes = node if isinstance(node, list) else [node]
    return {n.id for top in nodes for n in ast.walk(top)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _has_return(node):
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _outer_names(fn):
    """The globals and closure variables a function's code sees."""
    names = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            names[name] = cell.cell_contents
        except ValueError:  # not bound yet
            pass
    return names


@functools.lru_cache(maxsize=1)
def _effect_free():
    """What the probe runs: function -> how ("call", or "load"/"cast": typed, not run)."""
    names = ("abs add arange broadcast broadcast_to cat cdiv ceil clamp cos div_rn erf exp "
             "exp2 expand_dims fdiv floor fma full full_like interleave join log log2 maximum "
             "minimum mul multiple_of max_contiguous max_constancy num_programs permute "
             "program_id ravel reshape rsqrt sigmoid sin split sqrt sqrt_rn sub trans umulhi "
             "view where zeros zeros_like advance make_block_ptr pointer_type block_type "
             "str_to_ty").split()
    table = {}
    for module in (tl, tl.math):
        for name in names:
            try:
                table[getattr(module, name)] = "call"
            except Exception:  # not in this module (tl.math has the math only)
                pass
    for fn in (constexpr, _t.dtype, kernel_min, kernel_max, len, int, float, isinstance,
               getattr, hasattr, list, tuple):
        table[fn] = "call"
    table[tl.load] = "load"
    table[cast] = table[tensor.to] = "cast"
    return table


_PROBE_BUILTINS = {"min": kernel_min, "max": kernel_max, "len": len, "int": int,
                   "float": float, "isinstance": isinstance, "getattr": getattr,
                   "hasattr": hasattr, "list": list, "tuple": tuple}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


class _Env:
    """The names a block of the probed code has bound, over those of the block around it."""
    __slots__ = ("parent", "bound")

    def __init__(self, parent=None):
        self.parent, self.bound = parent, {}


class _Probe:
    """Evaluates kernel code that does not run, for the types it would give (module doc).
    `scope`: the values of the function's names where the probed code begins (stood in for on
    first use); `names`: its globals and closure variables; `visible`: the names of `scope`
    that Triton sees bound there (`visible_names`), all of them if None."""

    def __init__(self, names, scope, depth=0, visible=None):
        self.names, self.scope, self.depth = names, scope, depth
        self.visible = visible
        self.stood_in = {}
        self.returns = []  # the values of the `return` statements met
        self.root = _Env()

    # ----- names
    def local(self, name, env, live=False):
        """The value of a local name: bound by the probed code, else from the scope; `live`:
        only as Triton sees it there (not a name a loop's body bound in an earlier
        iteration, `visible_names`)."""
        while env is not None:
            if name in env.bound:
                return env.bound[name]
            env = env.parent
        if name not in self.scope or live and self.visible is not None and \
                name not in self.visible:
            return _MISSING
        if name not in self.stood_in:
            self.stood_in[name] = _stand_in(self.scope[name])
        return self.stood_in[name]

    def lookup(self, name, env):
        value = self.local(name, env)
        if value is not _MISSING:
            return value
        if name in self.names:
            return self.names[name]
        return _PROBE_BUILTINS.get(name, UNKNOWN)

    # ----- statements
    def block(self, stmts, env):
        """Walk `stmts`; True if they end in a `return`."""
        for stmt in stmts:
            if self.statement(stmt, env):
                return True
        return False

    def statement(self, s, env):
        if isinstance(s, ast.Assign):
            value = self.expr(s.value, env)
            value = UNKNOWN if value is UNKNOWN else assigned(value)
            for target in s.targets:
                self.bind(target, value, env)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            value = self.binary(s.op, self.lookup(s.target.id, env), self.expr(s.value, env))
            env.bound[s.target.id] = UNKNOWN if value is UNKNOWN else assigned(value)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            value = self.expr(s.value, env)
            if value is not UNKNOWN and not _annotated_constexpr(s.annotation):
                value = assigned(value)
            self.bind(s.target, value, env)
        elif isinstance(s, ast.If):
            return self.if_(s, env)
        elif isinstance(s, ast.Return):
            self.returns.append(None if s.value is None else self.expr(s.value, env))
            return True
        elif isinstance(s, (ast.For, ast.While)):
            self.loop(s, env)
        elif isinstance(s, (ast.Expr, ast.Pass, ast.Assert)):
            # calls for their effects are not run; what a `:=` in them binds is unknown
            for name in _names_bound(s):
                env.bound[name] = UNKNOWN
        else:
            for name in _names_bound(s):
                env.bound[name] = UNKNOWN
            if _has_return(s):
                self.returns.append(UNKNOWN)
        return False

    def bind(self, target, value, env):
        if isinstance(target, ast.Name):
            env.bound[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = value if isinstance(value, (tuple, list)) and len(value) == len(
                target.elts) and not any(isinstance(t, ast.Starred) for t in target.elts) \
                else [UNKNOWN] * len(target.elts)
            for t, v in zip(target.elts, parts):
                self.bind(t, v, env)
        else:  # x[i] = ..., x.a = ...: no name is bound (a starred target: unknown)
            for name in _names_bound(target):
                env.bound[name] = UNKNOWN

    def loop(self, s, env):
        """A loop is not walked. A runtime loop keeps the type of each name it carries
        (Triton requires it; the loop itself checks it as it runs); what else it binds, and
        all that `tl.static_range` (unrolled) binds, is unknown after it."""
        static = isinstance(s, ast.For) and is_static_range(s.iter)
        targets = _names_bound(s.target) if isinstance(s, ast.For) else set()
        for name in _names_bound(s):
            live = self.local(name, env, live=True)
            carried = not static and name not in targets and live is not UNKNOWN and \
                live is not _MISSING and _is_value(live) and type(live) not in _SCALARS
            if not carried:
                env.bound[name] = UNKNOWN
        if _has_return(s):
            self.returns.append(UNKNOWN)

    def if_(self, s, env):
        cond = self.expr(s.test, env)
        if not is_tensor(cond):
            try:
                taken = s.body if cond else s.orelse  # a constexpr: one side compiles
            except Exception:  # unknown: either side may be compiled, or both
                for name in _names_bound(s.body + s.orelse):
                    env.bound[name] = UNKNOWN
                if _has_return(s):
                    self.returns.append(UNKNOWN)
                return False
            return self.block(taken, env)
        return self.branches(s, env)

    def branches(self, s, env):
        """Both sides of an `if` on a runtime value: the names they bind must agree."""
        then_env, else_env = _Env(env), _Env(env)
        then_ends = self.block(s.body, then_env)
        else_ends = self.block(s.orelse, else_env)
        then_b, else_b = then_env.bound, else_env.bound
        for name in sorted(then_b.keys() | else_b.keys()):
            live = self.local(name, env, live=True)
            new_then, new_else = then_b.get(name, live), else_b.get(name, live)
            if live is UNKNOWN:
                env.bound[name] = UNKNOWN
            elif live is not _MISSING and _is_value(live):
                for side, new in (("then", new_then), ("else", new_else)):
                    if new is not UNKNOWN and not _same_type(new, live):
                        raise _Found(f"initial value for `{name}` is of type {_shown(live)}, but "
                                     f"the {side} block redefines it as {_shown(new)}"
                                     + _FIX_BRANCHES)
                env.bound[name] = new_then if new_then is not UNKNOWN else new_else
            elif name in then_b and name in else_b:
                if new_then is not UNKNOWN and new_else is not UNKNOWN and \
                        _is_value(new_then) and _is_value(new_else) and \
                        not _same_type(new_then, new_else):
                    raise _Found(f"Mismatched type for {name} between then block "
                                 f"({_type_of(new_then)}) and else block "
                                 f"({_type_of(new_else)})" + _FIX_BRANCHES)
                env.bound[name] = new_then if new_then is not UNKNOWN else new_else
            else:  # bound on one side only: Triton drops it after the `if`
                env.bound[name] = UNKNOWN
        return then_ends and else_ends

    # ----- expressions
    def expr(self, node, env):
        method = getattr(self, f"e_{type(node).__name__}", None)
        if method is None:
            return UNKNOWN
        try:
            return method(node, env)
        except _Found:
            raise
        except Exception:  # what the code would raise when it runs is not the probe's to say
            return UNKNOWN

    def e_Constant(self, node, env):
        return node.value

    def e_Name(self, node, env):
        return self.lookup(node.id, env)

    def e_NamedExpr(self, node, env):
        value = self.expr(node.value, env)
        env.bound[node.target.id] = value
        return value

    def e_Attribute(self, node, env):
        value = self.expr(node.value, env)
        return UNKNOWN if value is UNKNOWN else getattr(value, node.attr)

    def e_Subscript(self, node, env):
        value, index = self.expr(node.value, env), self.expr(node.slice, env)
        return UNKNOWN if value is UNKNOWN or index is UNKNOWN else value[index]

    def e_Slice(self, node, env):
        parts = [None if p is None else self.expr(p, env)
                 for p in (node.lower, node.upper, node.step)]
        return UNKNOWN if any(p is UNKNOWN for p in parts) else slice(*parts)

    def elements(self, nodes, env):
        out = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                value = self.expr(n.value, env)
                if not isinstance(value, (tuple, list)):
                    return UNKNOWN
                out.extend(value)
            else:
                out.append(self.expr(n, env))
        return UNKNOWN if any(v is UNKNOWN for v in out) else out

    def e_Tuple(self, node, env):
        values = self.elements(node.elts, env)
        return UNKNOWN if values is UNKNOWN else tuple(values)

    def e_List(self, node, env):
        return self.elements(node.elts, env)

    def binary(self, op, left, right):
        fn = _BINARY.get(type(op))
        if fn is None or left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            return fn(left, right)
        except Exception:
            return UNKNOWN

    def e_BinOp(self, node, env):
        return self.binary(node.op, self.expr(node.left, env), self.expr(node.right, env))

    def e_UnaryOp(self, node, env):
        value = self.expr(node.operand, env)
        if value is UNKNOWN:
            return UNKNOWN
        if isinstance(node.op, ast.Not):
            return arith.invert(to_int1(value)) if is_tensor(value) else not _unwrap(value)
        return _UNARY[type(node.op)](value)

    def e_Compare(self, node, env):
        if len(node.ops) != 1:
            return UNKNOWN
        left, right = self.expr(node.left, env), self.expr(node.comparators[0], env)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        return _COMPARE[type(node.ops[0])](left, right)

    def e_BoolOp(self, node, env):
        """As the kernel's `and`/`or` (runtime/jit.py): a constexpr that decides the result
        ends it, runtime operands combine elementwise as int1."""
        runtime, value = [], None
        for n in node.values:
            value = self.expr(n, env)
            if value is UNKNOWN:
                return UNKNOWN
            if not is_tensor(value):
                if bool(_unwrap(value)) is isinstance(node.op, ast.Or):
                    return value
                continue
            runtime.append(to_int1(value))
        if not runtime:
            return value
        combine = arith.and_ if isinstance(node.op, ast.And) else arith.or_
        return functools.reduce(combine, runtime)

    def e_IfExp(self, node, env):
        cond = self.expr(node.test, env)
        if is_tensor(cond):
            return self.ternary(node, env)
        if cond is UNKNOWN:
            return UNKNOWN
        return self.expr(node.body if cond else node.orelse, env)

    def ternary(self, node, env):
        """Both sides of a ternary on a runtime value: tensors of one type."""
        then, other = (_as_tensor(self.expr(n, env)) for n in (node.body, node.orelse))
        if then is not UNKNOWN and other is not UNKNOWN and not _same_type(then, other):
            raise _Found(f"Ternary expression with dynamic condition has inconsistent types "
                         f"{_type_of(then)} and {_type_of(other)}" + _FIX_BRANCHES)
        return then if then is not UNKNOWN else other

    def e_Call(self, node, env):
        fn = self.expr(node.func, env)
        args = self.elements(node.args, env)
        kwargs = {}
        for k in node.keywords:
            value = self.expr(k.value, env)
            if k.arg is not None:
                kwargs[k.arg] = value
            elif isinstance(value, dict):
                kwargs.update(value)
            else:
                return UNKNOWN
        if fn is UNKNOWN or args is UNKNOWN:
            return UNKNOWN
        if _is_jit(fn):
            if any(v is UNKNOWN for v in kwargs.values()):
                return UNKNOWN
            return self.call_jit(fn, args, kwargs)
        owner = getattr(fn, "__self__", None)
        if _tensorish(owner):  # a method of a tensor: its `tl` function
            fn, args = fn.__func__, [owner, *args]
        how = _effect_free().get(fn) if _hashable(fn) else None
        if how == "load":
            return _loaded(args[0] if args else kwargs.get("pointer"))
        if any(v is UNKNOWN for v in kwargs.values()):
            return UNKNOWN
        if how == "cast":
            return _cast(*args, **kwargs)
        return fn(*args, **kwargs) if how == "call" else UNKNOWN

    def call_jit(self, callee, args, kwargs):
        """A @jit function called by the probed code: its returns, probed in turn."""
        if self.depth >= _DEPTH:
            return UNKNOWN
        bound = callee.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        probe = _Probe(_outer_names(callee.fn), dict(bound.arguments), self.depth + 1)
        probe.block(callee.definition().body, probe.root)
        return decide_return(probe.returns)


def _annotated_constexpr(annotation):
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "constexpr"
    if isinstance(annotation, ast.Name):
        return annotation.id == "constexpr"
    return isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) and \
        annotation.value.split(".")[-1] == "constexpr"


def _is_jit(v):
    return type(v).__name__ == "JITFunction" and hasattr(v, "definition")


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _as_tensor(v):
    """A ternary's side on a runtime condition, as Triton's `to_tensor` makes it."""
    if v is UNKNOWN or _tensorish(v):
        return v
    v = _unwrap(v)
    return to_tensor(v) if type(v) in _SCALARS else UNKNOWN


def _loaded(pointer):
    """What `tl.load(pointer, ...)` gives, without reading: the pointee type in the pointer's
    shape (a block pointer's block)."""
    pointer = _unwrap(pointer)
    if is_tensor(pointer) and pointer.dtype.is_ptr():
        element, shape = pointer.dtype.element_ty, pointer.shape
    elif _tensorish(pointer) and hasattr(pointer, "block_shape"):
        element, shape = pointer.base.dtype.element_ty, pointer.block_shape
    else:
        return UNKNOWN
    return UNKNOWN if isinstance(element, _t.block_type) else _zeros(element, shape)


def _cast(x, dtype, *args, **kwargs):
    """What `tl.cast(x, dtype)` / `x.to(dtype)` gives, by type (a cast between pointers reads
    the address space, which the probe leaves alone)."""
    x, dtype = _unwrap(x), _unwrap(dtype)
    if isinstance(dtype, _t.block_type):
        dtype = dtype.element_ty
    if not isinstance(dtype, _t.dtype):
        return UNKNOWN
    x = to_tensor(x) if type(x) in _SCALARS else x
    return _zeros(dtype, x.shape) if is_tensor(x) else UNKNOWN


def _common(a, b, values):
    """Triton's return type of two returned values (decide_return_type): equal constexprs
    stay, else both are made tensors, whose types must be one."""
    if type(a) is tuple or type(b) is tuple:
        if type(a) is not type(b) or len(a) != len(b):
            raise _Found(_return_mismatch(a, b, values))
        return tuple(_common(x, y, values) for x, y in zip(a, b))
    if not _tensorish(a) and not _tensorish(b) and type(a) is type(b) and a == b:
        return a
    a_tensor, b_tensor = _as_tensor(a), _as_tensor(b)
    if a_tensor is UNKNOWN or b_tensor is UNKNOWN or not _same_type(a_tensor, b_tensor):
        raise _Found(_return_mismatch(a_tensor if a_tensor is not UNKNOWN else a,
                                      b_tensor if b_tensor is not UNKNOWN else b, values))
    return a_tensor


def _return_mismatch(a, b, values):
    return (f"Return type mismatch: {_type_of(a)} and {_type_of(b)}. Note all return types "
            f"were: [{', '.join(_type_of(v) for v in values)}]\nfix: return one type from "
            "every `return` of the function: convert the values (`.to(...)`), annotate "
            "pointer parameters alike (`tl.const` or not), or choose on a `tl.constexpr` "
            "parameter, which compiles one `return` only")


def decide_return(values):
    """The value standing for what a function with these returns gives (None if it has none,
    UNKNOWN if one is unknown); raises _Found where two of them cannot be one type."""
    known = [v for v in values if v is not UNKNOWN]
    if not known:
        return UNKNOWN if values else None
    common = functools.reduce(lambda a, b: _common(a, b, known), known)
    return common if len(known) == len(values) else UNKNOWN


def visible_names(fn_def):
    """For each `if` statement of a function (by id of its node): the names Triton certainly
    sees bound there. Its parameters and what the code before binds on every path: not a name
    bound on one side of an earlier `if` only, nor one a loop's body bound (the body's names
    are its own, each iteration; minitriton's scope still holds the last iteration's)."""
    a = fn_def.args
    seen = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    seen |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    out = {}
    _visible_in(fn_def.body, seen, out)
    return out


def _visible_in(stmts, seen, out):
    """Walk a block; `seen` (updated) holds the names bound on every path so far."""
    for s in stmts:
        if isinstance(s, ast.If):
            out[id(s)] = frozenset(seen)
            then_seen, else_seen = set(seen), set(seen)
            _visible_in(s.body, then_seen, out)
            _visible_in(s.orelse, else_seen, out)
            seen |= then_seen & else_seen
        elif isinstance(s, (ast.For, ast.While)):
            inside = seen | (_names_bound(s.target) if isinstance(s, ast.For) else set())
            _visible_in(s.body, inside, out)
            _visible_in(s.orelse, set(seen), out)
        elif isinstance(s, ast.With):
            for item in s.items:
                if item.optional_vars is not None:
                    seen |= _names_bound(item.optional_vars)
            _visible_in(s.body, seen, out)
        else:
            seen |= _names_bound(s)


class Branch:
    """An `if` statement or a ternary of a kernel's source whose sides the probe compares:
    `node` its AST as written, `names` the kernel's globals, `local_names` the names local to
    the function (of which `reads` are those the sides read or bind: their types key the
    checks), `visible` the names Triton sees bound at an `if` (`visible_names`)."""

    def __init__(self, node, names, local_names, visible=None):
        self.node, self.names, self.visible = node, names, visible
        parts = node.body + node.orelse if isinstance(node, ast.If) else [node.body, node.orelse]
        self.reads = tuple(sorted({n.id for part in parts for n in ast.walk(part)
                                   if isinstance(n, ast.Name)} & set(local_names)))
        self.missing = (_MISSING,) * len(self.reads)
        self.checked = set()  # the type keys checked

    def check(self, scope):
        """Compare the sides, with `scope` the names' values where the condition was found to
        be a runtime value; raises Triton's CompilationError where they disagree."""
        key = tuple(map(type_key, map(scope.get, self.reads, self.missing)))
        if key in self.checked or len(self.checked) >= PROBE_LIMIT:
            return
        probe = _Probe(self.names, scope, visible=self.visible)
        try:
            with np.errstate(all="ignore"):
                if isinstance(self.node, ast.If):
                    probe.branches(self.node, probe.root)
                else:
                    probe.ternary(self.node, probe.root)
        except _Found as found:
            raise CompilationError(str(found)) from None
        except Exception:  # code the probe cannot follow: nothing is known, nothing is wrong
            pass
        self.checked.add(key)


class Returns:
    """The `return` statements of a @jit function that has several: the types of what they
    return must agree, and decide what the function gives (Triton's decide_return_type)."""

    def __init__(self, jit_fn):
        self.jit_fn, self.names = jit_fn, _outer_names(jit_fn.fn)
        self.decided = {}  # type keys of the arguments -> what stands for the return value

    @classmethod
    def of(cls, jit_fn):
        """The check for `jit_fn` (a JITFunction), None where it has one `return` or none."""
        returns = sum(isinstance(n, ast.Return) for n in ast.walk(jit_fn.definition()))
        return cls(jit_fn) if returns > 1 else None

    def decide(self, args, kwargs):
        """What stands for the value the call with these arguments returns (UNKNOWN where
        the probe cannot tell); raises Triton's CompilationError where returns disagree."""
        key = (tuple(type_key(a) for a in args),
               tuple(sorted((k, type_key(v)) for k, v in kwargs.items())))
        found = self.decided.get(key, _MISSING)
        if found is not _MISSING:
            return found
        if len(self.decided) >= PROBE_LIMIT:
            return UNKNOWN
        try:
            bound = self.jit_fn.signature.bind(*args, **kwargs)
        except TypeError:  # the call raises it itself
            return UNKNOWN
        bound.apply_defaults()
        probe = _Probe(self.names, dict(bound.arguments))
        try:
            with np.errstate(all="ignore"):
                probe.block(self.jit_fn.definition().body, probe.root)
                decided = decide_return(probe.returns)
        except _Found as found:
            raise CompilationError(str(found)) from None
        except Exception:  # code the probe cannot follow: nothing is known
            decided = UNKNOWN
        self.decided[key] = decided
        return decided

    @staticmethod
    def returned(value, decided):
        """`value` as the function returns it: a constexpr number where the returns decided
        a scalar tensor (`return 1` beside `return 2`) is made that tensor."""
        if is_tensor(decided) and not decided.shape and type(value) in _SCALARS:
            return constant(value, decided.dtype)
        return value
