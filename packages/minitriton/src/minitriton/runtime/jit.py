"""`@jit`: turn kernel source into a Python function the simulator can run.

The kernel's own source (its file, a string it was exec'd from, or `_unsafe_update_src`'s) is
compiled again with these rewrites, keeping its file name and line numbers so that errors and
tracebacks point at the user's lines:
  * `print(...)` becomes a per-program print prefixed with the program id;
  * `min`/`max` on tensors become `tl.minimum`/`tl.maximum`, and `range` Triton's, as in Triton;
  * `assert cond, msg` becomes `tl.device_assert(cond, msg)`, as in Triton;
  * `a and b`, `a or b` and `not a` are lowered as Triton's code generator lowers them
    (`visit_BoolOp`, `visit_UnaryOp`): runtime operands are combined elementwise as int1
    (`logical_and`/`logical_or`, `not_`), all of them evaluated; a constexpr operand still
    short-circuits; block operands of `and`/`or` draw Triton's deprecation warning;
  * `x = value` makes a Python number a tensor, as Triton's `visit_Assign` (`x += 1` too);
  * a runtime `for`/`while` loop checks, after each iteration, that its loop-carried variables
    keep their types (Triton's "Loop-carried variable ... re-assigned" error);
  * an `if` whose branches bind names, and every ternary, pass their condition through a check
    that, where it is a runtime value, compares the types both sides give (Triton's
    "Mismatched type for x" and "Ternary expression ... inconsistent types" errors,
    language/branches.py); a ternary's result on a runtime condition is a tensor, as in Triton.
A call of a @jit function with several `return` statements checks that their types agree
("Return type mismatch").
Syntax Triton has no visitor for (`break`, `lambda`, ...) and the names a kernel may use are
checked before that (runtime/rules.py). Everything else runs as written: `tl` calls operate on
minitriton tensors.
"""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import linecache
import sys
import textwrap
import types
import warnings

from .. import context, source
from ..errors import CompilationError, LaunchError
from ..language import arith, branches
from ..language.control import assigned, is_static_range, kernel_max, kernel_min, kernel_range
from ..language.core import is_tensor, to_int1, to_tensor
from ..language.debug import device_assert, kernel_print
from ..types import _unwrap, constexpr, constexpr_type
from . import rules
from .launch import launch
from .launch import warmup as compile_only
from .reinterpret import TensorWrapper, reinterpret  # noqa: F401 - triton.runtime.jit's names

_RT = "_minitriton_rt_"
_BOOL_OP_WARNING = ("Logical operators 'and' and 'or' are deprecated for non-scalar tensors; "
                    "please use '&' or '|' instead")
_WARNED: dict = {}  # the registry of warn_explicit: each kernel line warns once, as Triton's
#                     compile-time warning appears once per compiled kernel


_NO_TYPE = object()


class _KernelBuiltins:
    """What the rewritten code calls; one per compiled function, holding its branches
    (language/branches.py's Branch, by the index the rewritten code passes)."""

    def __init__(self, branches):
        self.branches = branches

    def if_(self, site, test):
        """The condition of an `if` whose branches bind names: on a runtime value (a scalar;
        a block is the truth-value error `if` raises), both branches' types are compared."""
        if is_tensor(test) and (not test.shape or test.numel == 1):
            self.branches[site].check(sys._getframe(1).f_locals)
        return test

    @staticmethod
    def type_of(value):
        """`value.type`: the attribute where it has one, else the constexpr_type of the
        Python value (the kernel's constexpr arguments and literals are plain values here)."""
        found = getattr(value, "type", _NO_TYPE)
        return constexpr_type(value) if found is _NO_TYPE else found

    def ifexp(self, site, test, then, other):
        """`then() if test else other()`: on a runtime value both sides' types are compared,
        and the result is a tensor (Triton's visit_IfExp; None where the sides are calls that
        return nothing, Triton's void: `tl.store(...) if c else tl.store(...)`)."""
        if not is_tensor(test):
            return then() if test else other()
        self.branches[site].check(sys._getframe(1).f_locals)
        value = then() if test else other()
        if value is None or getattr(type(value), "_is_mt_tensor", False):
            return value
        return to_tensor(value)

    @staticmethod
    def print(*args, **kwargs):
        return kernel_print(*args, **kwargs)

    @staticmethod
    def min(*args, **kwargs):
        return kernel_min(*args, **kwargs)

    @staticmethod
    def max(*args, **kwargs):
        return kernel_max(*args, **kwargs)

    @staticmethod
    def range(*args):
        return kernel_range(*args)

    @staticmethod
    def bool_op(op, where, first, *rest):
        return _bool_op(op, where, first, rest)

    @staticmethod
    def assign(value):
        return assigned(value)

    @staticmethod
    def not_(value):
        value = _unwrap(value)
        if is_tensor(value):
            return arith.invert(_to_int1(value))
        return not value

    @staticmethod
    def carried(scope, names):
        """The loop-carried variables' values before a runtime loop: those of `names` (what
        the loop body assigns) bound now."""
        return {n: scope[n] for n in names if n in scope}

    @staticmethod
    def check_carried(before, scope):
        """After an iteration: Triton's code generator requires each loop-carried variable to
        keep its type (`_verify_loop_carried_variable`)."""
        for name, old in before.items():
            new = scope.get(name, old)
            old_t, new_t = is_tensor(old), is_tensor(new)
            if old_t and new_t:
                if old.type != new.type:
                    raise CompilationError(
                        f"Loop-carried variable {name} has initial type {old.type} but is "
                        f"re-assigned to {new.type} in loop! Please make sure that the type "
                        f"stays consistent.")
            elif old_t != new_t and new is not None and old is not None:
                raise CompilationError(
                    f"Loop carried variable {name} changed type, was {type(old).__name__} but "
                    f"is now {type(new).__name__}")

    @staticmethod
    def assert_(cond, msg=None):
        if is_tensor(cond):
            return device_assert(cond, msg or "assert")
        if not cond:
            return device_assert(False, msg or "assert")


def _bool_op(op, where, first, rest):
    """`a and b and ...` / `a or b or ...` as Triton's `visit_BoolOp`: operands are evaluated
    in order (`rest` are thunks); a constexpr that decides the result is returned at once,
    without evaluating what follows; one that does not is dropped; the runtime operands left
    are combined pairwise from the right with logical_and / logical_or. Block operands warn."""
    nontrivial = []
    value = first
    for i in builtins.range(len(rest) + 1):
        if i:
            value = rest[i - 1]()
        raw = _unwrap(value)
        if not is_tensor(raw):
            truth = bool(raw)
            if truth is (op == "or"):
                return value
            continue
        if raw.shape:
            filename, lineno = where
            warnings.warn_explicit(_BOOL_OP_WARNING, UserWarning, filename, lineno,
                                   registry=_WARNED)
        nontrivial.append(raw)
    if not nontrivial:
        return value
    combine = arith.and_ if op == "and" else arith.or_
    while len(nontrivial) >= 2:
        rhs, lhs = _to_int1(nontrivial.pop()), _to_int1(nontrivial.pop())
        nontrivial.append(combine(lhs, rhs))
    return nontrivial[0]


def _to_int1(x):
    """The operand of Python's `and`, `or`, `not` on a Triton tensor, as Triton takes it."""
    return to_int1(x, " (Python `and`/`or`/`not` on a Triton tensor need booleans: compare "
                      "first, e.g. `x != 0`)")


class _Rewriter(ast.NodeTransformer):
    def __init__(self, shadowed, filename="<kernel>", first=1, names=None, local_names=(),
                 visible=None):
        self.shadowed = shadowed
        self.loops = 0
        self.filename, self.first = filename, first  # where warnings point
        self.names = names if names is not None else {}  # the kernel's globals
        self.local_names = local_names  # its parameters, the names it binds, its closure's
        self.visible = visible if visible is not None else {}  # branches.visible_names
        self.branches = []  # branches.Branch of each `if` and ternary checked, by index

    def _rt(self, attr):
        return ast.Attribute(value=ast.Name(_RT, ast.Load()), attr=attr, ctx=ast.Load())

    def _branch(self, node):
        """Register `node` (as written, before rewriting) as a branch to check; its index."""
        self.branches.append(branches.Branch(copy.deepcopy(node), self.names, self.local_names,
                                            self.visible.get(id(node))))
        return ast.Constant(len(self.branches) - 1)

    def visit_If(self, node):
        # an `if` that binds no name has no types to compare (`if pid >= n: return`)
        site = self._branch(node) if any(
            isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            for stmt in node.body + node.orelse for n in ast.walk(stmt)) else None
        self.generic_visit(node)
        if site is not None:
            node.test = ast.copy_location(
                ast.Call(func=self._rt("if_"), args=[site, node.test], keywords=[]), node.test)
        return node

    def visit_IfExp(self, node):
        site = self._branch(node)
        self.generic_visit(node)
        thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                kw_defaults=[], defaults=[]), body=side)
                  for side in (node.body, node.orelse)]
        call = ast.Call(func=self._rt("ifexp"), args=[site, node.test, *thunks], keywords=[])
        return ast.copy_location(call, node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "and" if isinstance(node.op, ast.And) else "or"
        where = ast.Constant((self.filename, node.lineno + self.first - 1))
        rest = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                              kw_defaults=[], defaults=[]), body=v)
                for v in node.values[1:]]
        call = ast.Call(func=self._rt("bool_op"),
                        args=[ast.Constant(op), where, node.values[0]] + rest, keywords=[])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(func=self._rt("not_"), args=[node.operand],
                                          keywords=[]), node)

    def visit_Attribute(self, node):
        # `x.type` of a Python value (a constexpr argument, a literal: `(10).type`) is its
        # constexpr_type, as in Triton, where such values are constexprs
        self.generic_visit(node)
        if node.attr != "type" or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Call(func=self._rt("type_of"), args=[node.value],
                                          keywords=[]), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("print", "min", "max", "range") \
                and f.id not in self.shadowed:
            node.func = ast.copy_location(
                ast.Attribute(value=ast.Name(_RT, ast.Load()), attr=f.id, ctx=ast.Load()), f)
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        node.value = ast.copy_location(
            ast.Call(func=self._rt("assign"), args=[node.value], keywords=[]), node.value)
        return node

    def visit_AugAssign(self, node):
        # `n += 1` is `n = n + 1` in Triton's code generator: the result is assigned, so made a
        # tensor; subscripted and attribute targets are left alone
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        value = ast.BinOp(left=ast.Name(node.target.id, ast.Load()), op=node.op,
                          right=node.value)
        call = ast.Call(func=self._rt("assign"), args=[value], keywords=[])
        return ast.copy_location(ast.Assign(targets=[node.target], value=call), node)

    def _carry_check(self, node):
        """[before, node]: `node` (a runtime `for` or `while`) with Triton's loop-carried type
        check after each iteration; a `static_range` loop is unrolled by Triton: no check."""
        if isinstance(node, ast.For) and is_static_range(node.iter):
            return node
        loop_names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} \
            if isinstance(node, ast.For) else set()
        assigned = sorted({n.id for stmt in node.body for n in ast.walk(stmt)
                           if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                          - loop_names)
        if not assigned:
            return node
        self.loops += 1
        var = f"{_RT}carry{self.loops}"
        scope = ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])
        before = ast.Assign(targets=[ast.Name(var, ast.Store())], value=ast.Call(
            func=self._rt("carried"), args=[scope, ast.Constant(tuple(assigned))], keywords=[]))
        check = ast.Expr(ast.Call(func=self._rt("check_carried"),
                                  args=[ast.Name(var, ast.Load()), scope], keywords=[]))
        node.body.append(ast.copy_location(check, node.body[-1]))
        return [ast.copy_location(before, node), node]

    def visit_For(self, node):
        self.generic_visit(node)
        return self._carry_check(node)

    def visit_While(self, node):
        self.generic_visit(node)
        return self._carry_check(node)

    def visit_Assert(self, node):
        self.generic_visit(node)
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(_RT, ast.Load()), attr="assert_", ctx=ast.Load()),
            args=[node.test] + ([node.msg] if node.msg is not None else []), keywords=[])
        return ast.copy_location(ast.Expr(ast.copy_location(call, node)), node)


def _local_names(fn_def):
    names = {a.arg for a in fn_def.args.args + fn_def.args.kwonlyargs + fn_def.args.posonlyargs}
    for node in ast.walk(fn_def):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


_STRING_SOURCES = 0  # how many kernels' sources were found in strings (their linecache names)


def _code_in(code, target):
    """Whether `target` (a function's code) is `code` or nested in it, by name, line and
    bytecode."""
    if (code.co_name, code.co_firstlineno, code.co_code) == \
            (target.co_name, target.co_firstlineno, target.co_code):
        return True
    return any(isinstance(c, types.CodeType) and _code_in(c, target) for c in code.co_consts)


def _source_from_strings(fn, frame, depth=12):
    """The source text of `fn`, defined by `exec`/`compile` of a string, as the lines of that
    string: looked for among the strings held by the frames that were running when it was
    decorated (the code that called exec holds the string). None if none compiles to `fn`."""
    target = fn.__code__
    needle = f"def {fn.__name__}"
    for _ in range(depth):
        if frame is None:
            break
        for value in list(frame.f_locals.values()):
            if not isinstance(value, str) or needle not in value:
                continue
            try:
                code = compile(value, target.co_filename, "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            if _code_in(code, target):
                return value
        frame = frame.f_back
    return None


def _remember(text, fn):
    """Register `text` (the whole string `fn` was compiled from) in linecache under a name of
    its own, so that tracebacks, errors and pictures show its lines; returns that name."""
    global _STRING_SOURCES
    _STRING_SOURCES += 1
    name = f"<minitriton: {fn.__name__} from a string, #{_STRING_SOURCES}>"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    return name


class KernelSource:
    """Where a kernel's source is: its text from the first line of the definition, the file
    name its lines are shown under and the line it starts at."""

    def __init__(self, text, filename, first):
        self.text, self.filename, self.first = text, filename, first

    @classmethod
    def of(cls, fn, frame=None):
        """`fn`'s source: from its file (or linecache), else from the string it was exec'd
        from (looked for from `frame` up); None if neither has it."""
        try:
            lines, first = inspect.getsourcelines(fn)
            return cls("".join(lines), fn.__code__.co_filename, first)
        except (OSError, TypeError):
            pass
        text = _source_from_strings(fn, frame) if frame is not None else None
        if text is None:
            return None
        name = _remember(text, fn)
        first = fn.__code__.co_firstlineno
        lines = inspect.getblock(text.splitlines(True)[first - 1:])
        return cls("".join(lines), name, first)

    @classmethod
    def replaced(cls, fn, text):
        """New source text for `fn` (`_unsafe_update_src`), shown under a name of its own."""
        text = textwrap.dedent(text)
        return cls(text, _remember(text, fn), 1)


def parse_kernel(fn, src=None):
    """(the function's definition as an AST, its first line in its file); `src`: a
    KernelSource (else read from `fn`'s file)."""
    src = src if src is not None else KernelSource.of(fn)
    if src is None:
        raise CompilationError(f"cannot read the source of `{fn.__name__}`: it is defined "
                               "neither in a file nor by exec/compile of a string that is "
                               "still reachable; give @jit a function from a file, or set "
                               "its text with `kernel._unsafe_update_src(text)`")
    tree = ast.parse(textwrap.dedent(src.text))
    fn_def = tree.body[0]
    if not isinstance(fn_def, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise CompilationError(f"@jit expects a function definition, got {type(fn_def).__name__}")
    return fn_def, src.first


def compile_kernel(fn, src=None):
    """Rewrite and recompile `fn` (from `src`, a KernelSource, else its file); returns the new
    function (same globals, same closure)."""
    src = src if src is not None else KernelSource.of(fn)
    fn_def, first = parse_kernel(fn, src)
    filename = src.filename
    fn_def.decorator_list = []
    freevars = list(fn.__code__.co_freevars)
    shadowed = set(fn.__globals__) | set(freevars) | _local_names(fn_def)
    rewriter = _Rewriter(shadowed, filename, first, fn.__globals__,
                         _local_names(fn_def) | set(freevars), branches.visible_names(fn_def))
    fn_def = rewriter.visit(fn_def)
    factory = ast.FunctionDef(
        name="_minitriton_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in [_RT] + freevars],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fn_def, ast.Return(ast.Name(fn_def.name, ast.Load()))], decorator_list=[],
        returns=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, first - 1)
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    make = types.FunctionType(factory_code, fn.__globals__)
    cells = []
    for i, name in enumerate(freevars):
        try:
            cells.append(fn.__closure__[i].cell_contents)
        except ValueError:
            raise CompilationError(f"`{fn.__name__}` uses `{name}` before it is defined") from None
    new = make(_KernelBuiltins(rewriter.branches), *cells)
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    source.register(new.__code__, fn.__name__)
    return new


def is_constexpr_annotation(annotation):
    return annotation is constexpr or _names_annotation(annotation, "constexpr")


def _names_annotation(annotation, name):
    """Whether a parameter's annotation is `tl.<name>` (the class, or its name as a string)."""
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == name
    return getattr(annotation, "__name__", None) == name


class KernelInterface:
    """`kernel[grid](*args)`: shared by JITFunction, Autotuner and Heuristics."""

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid)


class JITFunction(KernelInterface):
    def __init__(self, fn, debug=None, do_not_specialize=(), noinline=None, repr=None,
                 **kwargs):
        self.fn = fn
        self.repr = repr  # the compiled kernel's name from its specialization (warmup)
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.constexprs = [i for i, p in enumerate(self.signature.parameters.values())
                           if is_constexpr_annotation(p.annotation)]
        # pointer parameters annotated `tl.const`: read-only
        self.const_params = {n for n, p in self.signature.parameters.items()
                             if _names_annotation(p.annotation, "const")}
        # parameters not specialised on the value 1 (by name or position, as in Triton)
        self.unspecialized = {self.arg_names[i] if isinstance(i, int) else i
                              for i in do_not_specialize}
        self._compiled = None
        self._violation = False  # not checked yet
        self._definition = None  # the function's AST as written (`definition`)
        self._returns = None  # branches.Returns, or False where there is one return or none
        # read now: a kernel exec'd from a string is found through the frames running now
        self._source = KernelSource.of(fn, sys._getframe(1))
        # constexpr values -> the largest block a lockstep launch of them accessed: the next
        # launch sizes its first chunk from it (runtime/executors.py, run_lockstep)
        self.block_sizes = {}

    @property
    def src(self):
        if self._source is None:
            parse_kernel(self.fn, self._source)  # raises, saying why
        return textwrap.dedent(self._source.text)

    @src.setter
    def src(self, text):
        self._unsafe_update_src(text)

    def _unsafe_update_src(self, new_src):
        """Replace the kernel's source text (Triton's name: the new text must define a function
        of the same name and parameters; it is compiled with the old function's globals)."""
        self._source = KernelSource.replaced(self.fn, new_src)
        self._compiled = None
        self._violation = False
        self._definition = self._returns = None
        self.block_sizes = {}

    def definition(self):
        """The function's definition as written (an ast.FunctionDef), parsed once."""
        if self._definition is None:
            self._definition = parse_kernel(self.fn, self._source)[0]
        return self._definition

    @property
    def compiled(self):
        """The re-compiled function, whatever Triton's compile rules say (see `compile`)."""
        if self._compiled is None:
            self._compiled = compile_kernel(self.fn, self._source)
        return self._compiled

    def rule_violation(self, seen=None):
        """The first of Triton's compile rules (runtime/rules.py) the kernel, or a @jit function
        it references, breaks; None if it keeps them. Checked once."""
        if self._violation is False:
            fn_def, first = parse_kernel(self.fn, self._source)
            filename = self._source.filename if self._source is not None else None
            self._violation = rules.check(self.fn, fn_def, first, seen, filename)
        return self._violation

    def compile(self, settings):
        """The function a launch runs: raises CompilationError, as Triton does when it compiles
        the kernel, where the kernel breaks Triton's rules and `settings.strict_globals`."""
        fn = self.compiled
        if settings.strict_globals:
            violation = self.rule_violation()
            if violation is not None:
                raise violation.error()
        return fn

    def __call__(self, *args, **kwargs):
        ctx = context.active()
        if ctx is None:
            raise LaunchError(f"Cannot call @jit'd function `{self.__name__}` outside of the "
                              f"scope of a kernel; launch it with `{self.__name__}[grid](...)`")
        fn = self.compile(ctx.settings)
        returns = self._returns
        if returns is None:
            returns = self._returns = branches.Returns.of(self) or False
        if returns is False:
            return fn(*args, **kwargs)
        decided = returns.decide(args, kwargs)  # Triton's "Return type mismatch"
        return returns.returned(fn(*args, **kwargs), decided)

    def run(self, *args, grid, warmup=False, **kwargs):
        __tracebackhide__ = True  # pytest shows the caller's line, not this one
        if warmup:  # Triton's `run(..., warmup=True)` compiles and does not launch
            return self.warmup(*args, grid=grid, **kwargs)
        return launch(self, grid, args, kwargs)

    def warmup(self, *args, grid, **kwargs):
        """Compile for these arguments without launching, as Triton's `warmup`: returns a
        `CompiledKernel` (runtime/compiled.py) whose `[grid](*args)` launches it."""
        return compile_only(self, grid, args, kwargs)

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
        do_not_specialize_on_alignment=(), debug=None, noinline=None):
    """Decorator: `@minitriton.jit` (or `@triton.jit` after `import minitriton as triton`)."""
    def decorate(f):
        return JITFunction(f, debug=debug, do_not_specialize=do_not_specialize, noinline=noinline,
                           repr=repr)
    return decorate(fn) if fn is not None else decorate
