"""Importing the package: any public name and any module works first in a fresh interpreter, and
the package has no import cycle.

A cycle makes the result of an import depend on what was imported before (a module sees its
partner half-initialized), so the first test imports each public name and each module first, in
interpreters that have imported nothing of the package. The cycle check reads every import of the
package from its source (module level and inside functions; ``if TYPE_CHECKING:`` blocks do not
run and are left out; a ``_LAZY`` table of :mod:`dask_kernels._lazy` counts as the imports it
performs) and finds the strongly connected components of that graph.
"""

import ast
import json
import os
import pkgutil
import subprocess
import sys

import dask_kernels

PACKAGE = os.path.dirname(dask_kernels.__file__)



def _modules():
    """``{module name: (path, is_package)}`` of every module of the package."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), os.path.dirname(PACKAGE))[:-3].split(os.sep)
                is_pkg = rel[-1] == "__init__"
                found[".".join(rel[:-1] if is_pkg else rel)] = (os.path.join(folder, f), is_pkg)
    return found


def _runs(node):
    """The statements under ``node`` that run (``if TYPE_CHECKING:`` bodies are left out)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for stmt in child.orelse:
                yield stmt
                yield from _runs(stmt)
            continue
        yield child
        yield from _runs(child)


def _absolute(module, package, level):
    base = package.split(".")
    return ".".join(base[: len(base) - level + 1] + ([module] if module else []))


def import_graph():
    """``{module: {modules of the package it imports}}``."""
    modules = _modules()
    graph = {}
    for name, (path, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        with open(path) as f:
            tree = ast.parse(f.read())
        targets = set()
        for node in _runs(tree):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node.module, package, node.level) if node.level else node.module
                # "from . import x": the submodule x if there is one, else the package's __init__
                targets |= {f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names}
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_LAZY" for t in node.targets) \
                    and isinstance(node.value, ast.Dict):  # dask_kernels._lazy: imported on first use
                for value in node.value.values:
                    target = value.value
                    level = len(target) - len(target.lstrip("."))
                    targets.add(_absolute(target.lstrip("."), package, level) if level else target)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    found = [sorted(c) for c in cycles(import_graph())]
    assert not found, f"import cycles in the package: {found}"


def test_the_cycle_check_sees_lazy_and_deferred_imports():
    graph = import_graph()
    assert "dask_kernels.maps.rff" in graph["dask_kernels"]  # the _LAZY table of dask_kernels/__init__
    assert "dask_kernels.maps.spec" in graph["dask_kernels.maps"]
    assert "dask_kernels.maps.spec" in graph["dask_kernels.pipeline.tasks"] or \
        "dask_kernels.maps" in graph["dask_kernels.pipeline.tasks"]  # inside a function
    assert "dask_kernels.maps.base" not in graph["dask_kernels.sidecar"]  # under TYPE_CHECKING only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


#: Modules that import by name at run time, and what: any other use of importlib or pkgutil in
#: the package is a second import mechanism, hidden from the cycle check above.
DYNAMIC_IMPORTS = {
    "dask_kernels._lazy": "the one lazy-import mechanism (its _LAZY tables are read above)",
    "dask_kernels.warm": "warm_writer preloads Zarr (WRITER_MODULES), no module of the package",
    "dask_kernels.learn.persist": "a saved model's scikit-learn estimator class, by its name",
    "dask_kernels._versions": "the same, where the installed scikit-learn may no longer have it",
}


def test_no_other_import_mechanism():
    found = set()
    for name, (path, _) in _modules().items():
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name in ("importlib", "pkgutil") for a in node.names) or \
                    isinstance(node, ast.ImportFrom) and node.module in ("importlib", "pkgutil") or \
                    isinstance(node, ast.Name) and node.id == "__import__":
                found.add(name)
    assert found <= set(DYNAMIC_IMPORTS), \
        f"modules importing by name at run time: {sorted(found - set(DYNAMIC_IMPORTS))}"


# Each line imports one thing with the package's modules removed from sys.modules first, so it
# meets the package as a fresh interpreter does (third-party libraries stay loaded: fast). The
# first line is checked in a truly fresh interpreter too (below).
_FIRST_IMPORTS = r"""
import importlib, json, sys, traceback
failures = {}
for line in sys.stdin.read().splitlines():
    for name in [m for m in sys.modules if m == "dask_kernels" or m.startswith("dask_kernels.")]:
        del sys.modules[name]
    kind, _, what = line.partition(" ")
    try:
        if kind == "name":
            exec(f"from dask_kernels import {what}", {})
        else:
            importlib.import_module(what)
    except BaseException:
        failures[line] = traceback.format_exc(limit=-3)
print(json.dumps(failures), flush=True)
"""


def _first_imports(lines):
    # cli/_forkserver preloads only in a worker server, which this variable marks
    env = {k: v for k, v in os.environ.items() if k != "DASK_KERNELS_WARM_METHODS"}
    out = subprocess.run([sys.executable, "-c", _FIRST_IMPORTS], input="\n".join(lines), capture_output=True,
                         text=True, env=env, timeout=600, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_every_public_name_and_module_imports_first():
    names = [n for n in dask_kernels.__all__ if n != "__version__"]
    modules = sorted(m for m in _modules() if not m.endswith("__main__"))
    failures = _first_imports([f"name {n}" for n in names] + [f"module {m}" for m in modules])
    assert not failures, "\n".join(f"{k}:\n{v}" for k, v in failures.items())


def test_a_map_imports_first_in_a_fresh_interpreter():
    for statement in ("from dask_kernels import RFF", "import dask_kernels as dk; dk.NRFF"):
        run = subprocess.run([sys.executable, "-c", statement], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{statement}:\n{run.stderr[-2000:]}"


def test_from_spec_knows_every_map_whatever_was_imported_first():
    import numpy as np

    spec = dask_kernels.GCWS(n_components=4).fit(np.ones((1, 3))).spec_json()
    code = ("import sys; from dask_kernels.maps.rff import RFF; from dask_kernels.maps import from_spec, "
            "registered_maps; print(from_spec(sys.argv[1]).method, len(registered_maps()))")
    run = subprocess.run([sys.executable, "-c", code, spec], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["gcws", str(len(dask_kernels.maps.spec.BUILTIN_METHODS))]


def test_every_public_name_is_in_the_lazy_table():
    assert set(dask_kernels.__all__) == set(dask_kernels._LAZY) | {"__version__"}
    assert set(dir(dask_kernels)) >= set(dask_kernels.__all__)


def test_every_cli_module_is_a_subcommand():
    from dask_kernels import cli

    public = {m.name.replace("_", "-") for m in pkgutil.iter_modules(cli.__path__) if not m.name.startswith("_")}
    assert set(cli._subcommands()) == public
