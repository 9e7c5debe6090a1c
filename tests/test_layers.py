"""The import graph: no module below the command line imports the package's ``__init__`` (which
imports every layer), so each layer imports only the modules it uses, downward."""

import ast
import os

import dask_kernels

PACKAGE = os.path.dirname(dask_kernels.__file__)


def _imports_of_the_package_root(path):
    rel = os.path.relpath(path, PACKAGE)
    depth = rel.count(os.sep)  # how many dots lead back to dask_kernels/
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module == "dask_kernels":
                yield node.lineno
            elif node.level and node.level == depth + 1 and node.module is None:
                yield node.lineno  # "from .. import x" reaching dask_kernels/__init__
        elif isinstance(node, ast.Import) and any(a.name == "dask_kernels" for a in node.names):
            yield node.lineno


def test_no_layer_below_the_cli_imports_the_package_init():
    offenders = []
    for folder, _, files in os.walk(PACKAGE):
        rel = os.path.relpath(folder, PACKAGE)
        if rel.split(os.sep)[0] == "cli":  # the top layer: it may use the public API
            continue
        for f in files:
            path = os.path.join(folder, f)
            if f.endswith(".py") and path != os.path.join(PACKAGE, "__init__.py"):
                offenders += [f"{os.path.relpath(path, PACKAGE)}:{line}" for line in _imports_of_the_package_root(path)]
    assert not offenders, f"imports of dask_kernels/__init__ (import the module that defines the name): {offenders}"
