"""The layer table of docs/guide/development.md is the import graph of the package.

Every import inside ``dask_kernels`` (module level or inside a function) is resolved to the
top-level module or subpackage it reaches: ``from .. import open_store`` counts as an import of
``pipeline``, where ``open_store`` is defined. The tests fail when the code gains or loses an
arrow that the table does not show, when an arrow points up
the layers, and when a private helper module (``_compat``, ``_progress``, ...) imports any
other part of the package.
"""

import ast
import os
import re

import dask_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "dask_kernels")
#: Package metadata, not a layer: ``from .. import __version__``.
METADATA = {"__version__"}


def _unit(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _resolve(name):
    """The unit defining ``dask_kernels.<name>``: a submodule, or the home of a re-exported object."""
    if os.path.exists(os.path.join(PKG, name)) or os.path.exists(os.path.join(PKG, name + ".py")):
        return name
    return _unit(getattr(dask_kernels, name).__module__)


def import_graph():
    """``{unit: {imported units}}`` over every module of the package but its ``__init__``."""
    edges = {}
    for folder, _, files in os.walk(PKG):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(folder, f), ROOT)[:-3].replace(os.sep, ".")
            if rel == "dask_kernels.__init__":
                continue
            is_pkg = rel.endswith(".__init__")
            module = rel[: -len(".__init__")] if is_pkg else rel
            here = _unit(module)
            with open(os.path.join(folder, f)) as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                targets = set()
                if isinstance(node, ast.Import):
                    assert not any(a.name == "dask_kernels" for a in node.names), \
                        f"{rel}: 'import dask_kernels' hides which layer it uses"
                    targets = {_unit(a.name) for a in node.names if a.name.startswith("dask_kernels.")}
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        parts = module.split(".")
                        base = parts[: len(parts) - node.level + (1 if is_pkg else 0)]
                        target = ".".join(base + ([node.module] if node.module else []))
                    else:
                        target = node.module or ""
                    if target == "dask_kernels":
                        targets = {_resolve(a.name) for a in node.names if a.name not in METADATA}
                    elif target.startswith("dask_kernels."):
                        targets = {_unit(target)}
                targets.discard(here)
                if targets:
                    edges.setdefault(here, set()).update(targets)
    return edges


def readme_layers():
    """``{unit: (layer, {imports})}`` from the development guide's table between the layer markers."""
    with open(os.path.join(ROOT, "docs", "guide", "development.md")) as f:
        text = f.read()
    body = text.split("<!-- layers:begin -->")[1].split("<!-- layers:end -->")[0]
    table = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            for unit in re.findall(r"`(\w+)`", cells[1]):
                table[unit] = (int(cells[0]), set(re.findall(r"`(\w+)`", cells[2])))
    assert table, "README: no layer table between <!-- layers:begin --> and <!-- layers:end -->"
    return table


def test_readme_layer_table_is_the_import_graph():
    graph, table = import_graph(), readme_layers()
    public = {u: ts - {t for t in ts if t.startswith("_")} for u, ts in graph.items() if not u.startswith("_")}
    units = {u for u in os.listdir(PKG) if not u.startswith("_") and (u.endswith(".py") or
             os.path.isdir(os.path.join(PKG, u)) and os.path.exists(os.path.join(PKG, u, "__init__.py")))}
    units = {u[:-3] if u.endswith(".py") else u for u in units}
    assert units == set(table), f"README layer table lists {sorted(table)}, the package has {sorted(units)}"
    diff = {u: {"in the code only": sorted(public.get(u, set()) - table[u][1]),
                "in the README only": sorted(table[u][1] - public.get(u, set()))}
            for u in sorted(units) if public.get(u, set()) != table[u][1]}
    assert not diff, diff


def test_imports_point_down_the_layers():
    graph, table = import_graph(), readme_layers()
    up = sorted((a, b) for a, bs in graph.items() for b in bs
                if not a.startswith("_") and not b.startswith("_") and table[b][0] > table[a][0])
    assert not up, f"imports that point up the layers: {up}"


def test_private_helpers_import_nothing_of_the_package():
    graph = import_graph()
    layers = {u: {t for t in ts if not t.startswith("_")} for u, ts in graph.items() if u.startswith("_")}
    assert not {u: ts for u, ts in layers.items() if ts}, "a private helper imports a layer"


def test_names_imported_from_the_package_are_charged_to_their_layer():
    assert _resolve("open_store") == "pipeline" and _resolve("GCWS") == "maps" and _resolve("io") == "io"
