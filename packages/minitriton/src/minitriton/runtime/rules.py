"""Triton's compile rules for the names a kernel uses, checked on the kernel's AST.

Triton 3.6 resolves every name a @jit function reads against its globals and closure
(`JITFunction.get_capture_scope`), twice:
  * computing the cache key at the first launch (runtime/jit.py, `DependenciesFinder`): a
    referenced global, closure variable or module attribute that is callable must be a @jit
    function, a triton.language builtin or a class, else
    `RuntimeError: Unsupported function referenced: <function helper at 0x...>`;
  * generating code (compiler/code_generator.py, `global_lookup`): a global or closure variable
    must be a constexpr value (`tl.constexpr(42)`, None, a dtype), a module, a @jit function, a
    triton.language member or a namedtuple class, else `NameError: Cannot access global
    variable ...` (a CompilationError at the line); a name that is neither found nor one of the
    few Python builtins Triton knows is `NameError: abs is not defined`.
Parameter defaults are exempt (Triton allows globals there; Python evaluated them already).
minitriton checks the same statically, once per @jit function, and raises when the kernel is
compiled at its first launch (a nested @jit function: with its caller). Unlike Triton, every line
is looked at, also the branch of an `if` on a constexpr that a specialisation does not compile.
"""
from __future__ import annotations

import ast
import linecache
import types

from .. import language as tl
from ..errors import CompilationError
from ..types import constexpr, dtype

# the Python builtins a Triton kernel can name (CodeGenerator.builtin_namespace)
TRITON_BUILTINS = ("len", "list", "range", "float", "int", "isinstance", "getattr", "hasattr",
                   "print", "min", "max")
# modules whose attributes Triton does not look at when it hashes a kernel's dependencies
_LANGUAGE_MODULES = ("minitriton.language", "triton.language",
                     "triton.experimental.gluon.language",
                     "minitriton.experimental.gluon.language")
_UNCHECKED_MODULES = ("copy", "math")
# members of these count as triton.language's (minitriton's `tl`, dtypes, constexpr)
_LANGUAGE_MEMBERS = _LANGUAGE_MODULES + ("minitriton.types",)
_LENIENT = ("Settings(strict_globals=False) (MINITRITON_STRICT_GLOBALS=0) runs such kernels "
            "leniently, as Triton's interpreter does.")
_ABSENT = object()


class Violation:
    """The first rule a kernel breaks: what Triton says and where."""

    def __init__(self, kernel, filename, lineno, line, message):
        self.kernel, self.filename, self.lineno, self.line = kernel, filename, lineno, line
        self.message = message

    def error(self):
        e = CompilationError(self.message)
        e._locate(self.kernel, None, (self.filename, self.lineno, self.line))
        return e


def _module_of(val):
    try:
        return getattr(val, "__module__", None) or ""
    except Exception:  # an object whose attribute lookup itself fails is no builtin
        return ""


def _is_language_member(val):
    module = _module_of(val)
    # minitriton's own host helpers (cdiv, next_power_of_2) are Triton's constexpr_functions
    return module == "minitriton" or module.startswith(_LANGUAGE_MEMBERS)


def _is_jit(val):
    """A @jit function (a `gluon.jit` one too): Triton's isinstance(val, JITFunction)."""
    return any(c.__name__ == "JITFunction" for c in type(val).__mro__) and hasattr(val, "fn")


def _is_namedtuple_class(val):
    return isinstance(val, type) and issubclass(val, tuple) and hasattr(val, "_fields")


def unsupported_function(val):
    """Triton's DependenciesFinder.record_reference: is `val` a function a kernel cannot use?"""
    if val is None or isinstance(val, types.ModuleType) or _is_jit(val):
        return False
    if getattr(val, "__triton_builtin__", False) or _is_language_member(val):
        return False
    return callable(val) and not isinstance(val, (type, constexpr))


def allowed_global(name, val):
    """Triton's CodeGenerator global_lookup: may a kernel read this global?"""
    return (name in TRITON_BUILTINS or val is None or isinstance(val, (types.ModuleType, constexpr,
                                                                       dtype))
            or _is_jit(val) or getattr(val, "__triton_builtin__", False)
            or _is_language_member(val) or _is_namedtuple_class(val))


def _local_names(fn_def):
    a = fn_def.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    for node in ast.walk(fn_def):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _fix_for_global(name, val, closure):
    simple = isinstance(val, (bool, int, float, str))
    shown = f"tl.constexpr({val!r})" if simple else "tl.constexpr(...)"
    passed = f"{name}={val!r}" if simple else f"{name}=..."
    where = (f"`{name}` is a variable of the function around the kernel, which Triton treats "
             "as a global. " if closure else "")
    return (f"\n{where}fix: make it a constexpr value, `{name} = {shown}`, or pass it to the "
            f"kernel as a constexpr argument (`{name}: tl.constexpr` in its signature, "
            f"`{passed}` at the launch). {_LENIENT}")


def _global_message(name, val, closure):
    return (f"Cannot access global variable {name} from within @jit'ed function. Triton kernels "
            "can only access global variables that are instanstiated as constexpr (`x = "
            "triton.language.constexpr(42)`). Note that this is different from annotating a "
            "variable as constexpr (`x: triton.language.constexpr = 42`), which is not "
            "supported." + _fix_for_global(name, val, closure))


def _function_message(name, val):
    return (f"Unsupported function referenced: {val}\nfix: a kernel can call @triton.jit "
            "functions, triton.language functions and the Python builtins Triton knows ("
            f"{', '.join(TRITON_BUILTINS)}); decorate `{name}` with @triton.jit, or compute its "
            f"value on the host and pass it as a tl.constexpr argument. {_LENIENT}")


def _undefined_message(name):
    hint = f"use `tl.{name}`; " if hasattr(tl, name) else ""
    return (f"{name} is not defined\nfix: Triton kernels see only these Python builtins: "
            f"{', '.join(TRITON_BUILTINS)}; {hint}{_LENIENT}")


# syntax Triton's code generator has no visitor for: "unsupported AST node type: X"
# (CodeGenerator.generic_visit), with what to write instead
UNSUPPORTED_SYNTAX = {
    ast.Break: "a runtime loop cannot be left early: loop to the end with a mask, or use a "
               "`while` loop whose condition you clear",
    ast.Continue: "skip the rest of the body with an `if` (or a mask) instead",
    ast.Lambda: "define a @triton.jit function and pass it instead (e.g. as the combine_fn of "
                "tl.reduce / tl.associative_scan)",
    ast.GeneratorExp: "use a tuple of values or tl.static_range",
    ast.SetComp: "", ast.DictComp: "", ast.Dict: "", ast.Set: "",
    ast.Try: "", ast.Raise: "use tl.device_assert or tl.static_assert",
    ast.Global: "", ast.Nonlocal: "", ast.Delete: "", ast.Yield: "", ast.YieldFrom: "",
    ast.Await: "", ast.ClassDef: "", ast.Import: "import at the top of the module",
    ast.ImportFrom: "import at the top of the module", ast.AsyncFor: "", ast.AsyncWith: "",
}


class _Checker(ast.NodeVisitor):
    """Visits a kernel's body (not its parameter defaults) and collects, in source order, the
    names that break the function rule and those that break the global rule."""

    def __init__(self, fn, fn_def):
        self.fn, self.local = fn, _local_names(fn_def)
        cells = fn.__closure__ or ()
        self.closure = {}
        for name, cell in zip(fn.__code__.co_freevars, cells):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:  # not bound yet: compile_kernel reports it
                pass
        self.functions, self.globals, self.jit_callees, self.syntax = [], [], [], []

    def generic_visit(self, node):
        hint = UNSUPPORTED_SYNTAX.get(type(node))
        if hint is not None:
            self.syntax.append((node, f"unsupported AST node type: {type(node).__name__}" +
                                (f" ({hint})" if hint else "")))
        super().generic_visit(node)

    def lookup(self, name):
        if name in self.local:
            return _ABSENT
        val = self.fn.__globals__.get(name, _ABSENT)
        return self.closure.get(name, _ABSENT) if val is _ABSENT else val

    def visit_arguments(self, node):
        return None  # defaults: evaluated by Python at definition, allowed by Triton

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load) or node.id in self.local:
            return None
        val = self.lookup(node.id)
        if val is _ABSENT:
            if node.id not in TRITON_BUILTINS:
                self.globals.append((node, _undefined_message(node.id)))
            return None
        self._reference(node, node.id, val)
        if not allowed_global(node.id, val):
            closure = node.id not in self.fn.__globals__
            self.globals.append((node, _global_message(node.id, val, closure)))
        return val

    def visit_Attribute(self, node):
        if isinstance(node.value, (ast.Name, ast.Attribute)):
            lhs = self.visit(node.value)
        else:
            self.visit(node.value)
            return None
        if lhs is None or lhs is _ABSENT:
            return None
        if isinstance(lhs, types.ModuleType) and \
                lhs.__name__.startswith(_LANGUAGE_MODULES + _UNCHECKED_MODULES):
            return None
        try:
            val = getattr(lhs, node.attr)
        except Exception:  # Python raises it where the line runs
            return None
        self._reference(node, ast.unparse(node), val)
        return val

    def _reference(self, node, name, val):
        if _is_jit(val):
            self.jit_callees.append((node, val))
        elif name not in TRITON_BUILTINS and unsupported_function(val):
            self.functions.append((node, _function_message(name, val)))


def check(fn, fn_def, first_line, seen=None, filename=None):
    """The first rule `fn` (parsed as `fn_def`, starting at `first_line` of `filename`, by
    default its code's file) or a @jit function it references breaks, as a Violation; None if
    it keeps them."""
    seen = set() if seen is None else seen
    seen.add(fn)
    checker = _Checker(fn, fn_def)
    for stmt in fn_def.body:
        checker.visit(stmt)
    found = checker.syntax[:1] or checker.functions[:1] or checker.globals[:1]
    if found:
        node, message = found[0]
        lineno = first_line + node.lineno - 1
        filename = filename or fn.__code__.co_filename
        return Violation(fn.__name__, filename, lineno, linecache.getline(filename, lineno),
                         message)
    for _, callee in checker.jit_callees:
        if callee.fn not in seen:
            violation = callee.rule_violation(seen)
            if violation is not None:
                return violation
    return None

