"""`tritonlab compile-report`: what torch.compile makes of a function of yours."""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path

from rich.console import Console

from .options import (UserError, add_device, add_dtype, output_file, parse_shape,
                      resolve_device)


def load_function(target):
    """The function named by 'module:function', the module importable from the current
    directory."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise UserError("give the function as module:function")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        # Only the module asked for is the user's mistake; a missing import inside it is a bug
        # of theirs, and its traceback says where.
        if e.name is None or not (module_name + ".").startswith(e.name + "."):
            raise
        raise UserError(f"no module named {e.name!r} in {os.getcwd()} or on sys.path") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserError(f"module {module_name!r} has no function {attr!r}")
    return fn


def _plural(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def check_arity(fn, target, count):
    """A UserError when `fn` cannot be called with `count` positional tensors (one per shape of
    --shapes), said in the user's terms rather than as Python's TypeError from deep inside
    torch.compile; nothing when its signature cannot be read (some builtins)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*range(count))
        return
    except TypeError:
        pass
    params = signature.parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    keyword_only = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if keyword_only and len(required) <= count:
        raise UserError(f"{target} also needs the keyword-only argument(s) "
                        f"{', '.join(keyword_only)}, which --shapes cannot give; wrap it in a "
                        "function of tensors only")
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        takes = f"at least {len(required)}"
    elif len(required) == len(positional):
        takes = str(len(positional))
    else:
        takes = f"{len(required)} to {len(positional)}"
    raise UserError(f"{target} takes {takes} argument{'' if takes == '1' else 's'} but "
                    f"--shapes gave {_plural(count, 'shape')} (one shape per tensor argument)")


def run_compile_report(args):
    import torch

    from .. import compilation  # imports torch
    fn = load_function(args.target)
    shapes = [parse_shape(s) for s in args.shapes]
    check_arity(fn, args.target, len(shapes))
    device = resolve_device(args.device, lambda: "cuda" if torch.cuda.is_available() else "cpu")
    inputs = [torch.randn(*shape, device=device, dtype=getattr(torch, args.dtype))
              for shape in shapes]
    console = Console()
    console.print(compilation.explain(fn, *inputs).table(title=f"{args.target} on {device}"))
    if args.time:
        console.print(str(compilation.speedup(fn, *inputs, device=device)))
    if args.code:
        _, sources = compilation.generated_code(fn, *inputs)
        Path(args.code).write_text("\n\n".join(sources))
        kernels = compilation.describe_kernels(compilation.count_kernels(sources))
        print(f"generated code: {args.code} ({kernels})")
    return 0


def register(subparsers):
    p = subparsers.add_parser("compile-report", help="what torch.compile makes of your function",
                              description="Import FUNCTION (module:function, the module "
                                          "importable from the current directory), call it on "
                                          "random tensors of the given shapes, and report "
                                          "Dynamo's graphs and graph breaks with their reasons; "
                                          "optionally the eager/compiled times and Inductor's "
                                          "generated code.")
    p.add_argument("target", metavar="module:function")
    p.add_argument("--shapes", nargs="+", required=True, metavar="AxB",
                   help="one shape per tensor argument, e.g. 8x16 16")
    add_dtype(p)
    add_device(p, devices="cuda or cpu", default="cuda when available")
    p.add_argument("--time", action="store_true", help="also time eager against compiled")
    p.add_argument("--code", metavar="FILE", type=output_file(),
                   help="save Inductor's generated code here")
    p.set_defaults(func=run_compile_report)
