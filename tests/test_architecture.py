"""The layers of both packages (docs/architecture.md), checked on every run of the suite:
import-linter's contracts from pyproject.toml, and no import hidden inside a function except of
the optional heavy dependencies."""
import ast
import contextlib
import io
from pathlib import Path

import pytest

import minitriton
import tritonlab

ROOT = Path(__file__).resolve().parents[1]
# imported where they are used, so that what does not need them does not pay for them
HEAVY = {"torch", "matplotlib", "triton"}
PACKAGES = [Path(minitriton.__file__).parent, Path(tritonlab.__file__).parent]
# the command line's handlers also import what loads torch or NumPy (tritonlab's modules,
# minitriton) when they run: `tritonlab --help` takes 0.4 s instead of 5 (docs/architecture.md)
CLI = Path(tritonlab.__file__).parent / "cli"
CLI_LAZY = HEAVY | {"minitriton", ""}  # "" is a relative import of tritonlab's own modules
# the project's modules that wrap an optional heavy dependency, imported where first needed:
# language/dot_compiled.py is numba (minitriton's `fast` extra), imported when a dot first runs
OPTIONAL = {".dot_compiled"}


def test_import_linter_contracts_hold():
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is a test extra; the "
                              "GPU machine's own Python lacks it")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                                  no_logo=True)
    assert status == 0, out.getvalue()


def _function_local_imports(path):
    """(line, module) of every import inside a function body of one source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found += [(inner.lineno, a.name) for a in inner.names]
                elif isinstance(inner, ast.ImportFrom):  # `from . import x`: ".x"
                    found.append((inner.lineno, "." * inner.level +
                                  (inner.module or (inner.names[0].name if inner.level else ""))))
    return found


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_no_function_local_imports_but_heavy_dependencies(package):
    bad = sorted({f"{path.relative_to(package.parent)}:{line}: {module}"
                  for path in package.rglob("*.py")
                  for line, module in _function_local_imports(path)
                  if ("" if module.startswith(".") else module.split(".")[0]) not in
                  (CLI_LAZY if CLI in path.parents else HEAVY) and module not in OPTIONAL})
    assert not bad, "imports inside functions (move them to the top of the module):\n" + \
        "\n".join(bad)


def test_the_scan_finds_function_local_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os\n\ndef f():\n    import json\n    from . import x\n"
                      "    g = lambda: __import__('y')\n")
    assert _function_local_imports(source) == [(4, "json"), (5, ".x")]


def _imports_of(path, package, module_name):
    """(absolute module names a source file imports, names it takes from the package root
    `package` that are not its submodules)."""
    tree = ast.parse(path.read_text(), str(path))
    modules, from_root = set(), set()
    parts = module_name.split(".")
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[:len(parts) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if target != package:
                modules.add(target)
            for a in node.names:
                modules.add(f"{target}.{a.name}")
                if target == package and not (Path(minitriton.__file__).parent / a.name).exists() \
                        and not (Path(minitriton.__file__).parent / f"{a.name}.py").exists():
                    from_root.add(a.name)
    return modules, from_root


def test_nothing_the_front_door_imports_imports_the_front_door():
    """minitriton/__init__.py imports its layers; none of them (nor what they import) may
    import `minitriton` itself back (a cycle through the front door; the runner and the pytest
    plugin, above it, may)."""
    root = Path(minitriton.__file__).parent

    def path_of(name):
        rel = name.split(".")[1:]
        for candidate in (root.joinpath(*rel).with_suffix(".py"),
                          root.joinpath(*rel, "__init__.py")):
            if candidate.exists():
                return candidate
        return None

    seen, todo, bad = set(), ["minitriton"], []
    while todo:
        name = todo.pop()
        path = path_of(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        modules, from_root = _imports_of(path, "minitriton", name)
        if name != "minitriton":
            if "minitriton" in modules or from_root:
                bad.append(f"{name} imports minitriton's front door "
                           f"({', '.join(sorted(from_root)) or 'import minitriton'})")
        todo += [m for m in modules if m.startswith("minitriton.") and
                 not m.startswith(("minitriton.runner", "minitriton.pytest_plugin"))]
    assert len(seen) > 20, seen  # the walk found the layers
    assert not bad, "\n".join(bad)


MAX_LINES = 600


def test_no_module_of_the_packages_is_over_600_lines_without_a_reason():
    """A module of packages/ longer than MAX_LINES says why in its docstring (a paragraph that
    starts `Length:`); else split it by concern."""
    package = Path(minitriton.__file__).parent
    long = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "\nLength: " not in "\n" + doc:
                long.append(f"{path.relative_to(package.parent)}: {text.count(chr(10))} lines")
    assert not long, "modules over 600 lines with no `Length:` reason:\n" + "\n".join(long)
