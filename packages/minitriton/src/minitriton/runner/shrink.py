"""`--shrink N`: run a program with its hard-coded problem sizes divided by N.

Tutorials such as Triton's 09 (persistent matmul) and 10 (block-scaled matmul) check their
kernels at 8192 x 8192 sizes written into the program; on a CPU those do not finish. `--shrink`
rewrites the program's own script, before it runs, and nothing else:

* every integer literal that is a power of two from 1024 up (1024, 2048, 4096, 8192, ...) becomes
  that literal divided by N, but not below 64 (8192 -> 512 with N = 16);
* except where it would change a kernel or how a kernel is compiled: inside functions decorated
  with anything named `jit`, `autotune` or `heuristics` (`@triton.jit`, ...), in
  `triton.Config(...)` and `tl.constexpr(...)` calls (the constants kernels read), in a launch
  `kernel[grid](..., BLOCK=1024)` (its grid and its block sizes go together), and in
  `NAME: tl.constexpr = ...`;
* imported modules (and `-m MODULE` programs) are not rewritten; line numbers are kept, so
  tracebacks point at the program's own lines.

`rewrite(source)` returns the new source's code object and the list of (line, old, new) changes,
which the runner prints to stderr so the run says what it changed.
"""
from __future__ import annotations

import ast

MIN_SIZE = 1024
FLOOR = 64
KERNEL_DECORATORS = ("jit", "autotune", "heuristics")


def _name(node):
    """The last name of a dotted expression (`triton.jit` -> "jit"), of a call's callee too."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _shrinkable(value):
    return (type(value) is int and value >= MIN_SIZE and value & (value - 1) == 0)


class _Shrinker(ast.NodeTransformer):
    def __init__(self, factor):
        if int(factor) < 1:
            raise ValueError(f"--shrink needs a factor of at least 1 (got {factor})")
        self.factor = int(factor)
        self.changes = []

    def visit_FunctionDef(self, node):
        if any(_name(d) in KERNEL_DECORATORS for d in node.decorator_list):
            return node
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node):
        if _name(node) in ("Config", "constexpr"):  # triton.Config({...}), tl.constexpr(2048)
            return node
        if isinstance(node.func, ast.Subscript):  # kernel[grid](args, META=...): the grid
            return node                           # and the launch's block sizes go together
        return self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if _name(node.annotation) == "constexpr":
            return node
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if _shrinkable(node.value):
            new = max(FLOOR, node.value // self.factor)
            if new != node.value:
                self.changes.append((node.lineno, node.value, new))
                return ast.copy_location(ast.Constant(new), node)
        return node


def rewrite(source, filename, factor):
    """(code object, changes) of `source` with its sizes divided by `factor`."""
    tree = ast.parse(source, filename)
    shrinker = _Shrinker(factor)
    tree = ast.fix_missing_locations(shrinker.visit(tree))
    return compile(tree, filename, "exec", dont_inherit=True), shrinker.changes


def describe(changes, filename, limit=12):
    """A short account of the changes for stderr."""
    if not changes:
        return f"minitriton --shrink: no size literal to change in {filename}"
    shown = ", ".join(f"line {line}: {old} -> {new}" for line, old, new in changes[:limit])
    more = f", and {len(changes) - limit} more" if len(changes) > limit else ""
    return f"minitriton --shrink: {len(changes)} sizes in {filename}: {shown}{more}"
