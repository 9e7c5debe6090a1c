"""The modules of dask_kernels/learn import each other without a cycle (imports inside
functions count: a deferred import hides a cycle, it does not remove it), and the data layer
(sources, shuffle, _gather) imports nothing of the learner's."""

import ast
import pathlib

import dask_kernels.learn

LEARN = pathlib.Path(dask_kernels.learn.__file__).parent
PACKAGE = "dask_kernels.learn"


def _imports(path):
    """The learn/ modules ``path`` imports, anywhere in the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and node.module and node.module.startswith(PACKAGE + "."):
                base = node.module[len(PACKAGE) + 1:]
            elif node.level == 0 and node.module == PACKAGE or node.level == 1 and node.module is None:
                base = None
            else:
                continue
            if base is None:  # from . import x / from dask_kernels.learn import x
                names.update(a.name for a in node.names)
            else:
                names.add(base.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(a.name[len(PACKAGE) + 1:].split(".")[0] for a in node.names
                         if a.name.startswith(PACKAGE + "."))
    return names


def _graph():
    modules = {p.stem: p for p in LEARN.glob("*.py") if p.stem != "__init__"}
    return {m: sorted(_imports(p) & set(modules) - {m}) for m, p in modules.items()}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for n in graph[m]:
            if state.get(n) == "open":
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n, path + [n])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_the_graph_is_read():
    graph = _graph()
    assert "learner" in graph["incremental"] and "shuffle" in graph["feeds"]  # (a parser that finds nothing fails)


def test_no_import_cycle_in_learn():
    assert _cycle(_graph()) is None


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": []}) == ["a", "b", "c", "a"]


def test_the_data_layer_does_not_import_the_learner():
    graph = _graph()
    learner = {"learner", "sgd_fast", "_sgd_kernels", "incremental", "feeds", "replicas", "remote", "checkpointer"}
    for data in ("sources", "shuffle", "_gather"):
        assert not set(graph[data]) & learner, (data, graph[data])
