"""dask_kernels/_compat.py: the private names resolve, the version bounds in pyproject.toml are the
ones the compat layer states, and the installed versions lie within them."""

import ast
import os
import tomllib
from importlib.metadata import version

from packaging.requirements import Requirement

from dask_kernels import _compat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "dask_kernels")


def _dependencies():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return {Requirement(d).name: Requirement(d) for d in deps}


def test_private_names_resolve_through_compat():
    import numbers

    import pytest

    assert issubclass(_compat.InvalidParameterError, ValueError)
    constraints = {"k": [_compat.Interval(numbers.Integral, 1, None, closed="left")]}
    _compat.validate_parameter_constraints(constraints, {"k": 3}, "T")
    with pytest.raises(_compat.InvalidParameterError, match="'k' parameter of T"):
        _compat.validate_parameter_constraints(constraints, {"k": 0}, "T")
    assert _compat.StrOptions({"a", "b"}).is_satisfied_by("b")
    assert callable(_compat.cgutils.get_or_insert_function)
    assert set(_compat.__all__) >= set(_compat._LAZY) and all(getattr(_compat, n) for n in _compat._LAZY)


def _instances():
    """An object of each class in ``_compat.PRIVATE_ATTRIBUTES``, built as the package builds it."""
    import argparse

    import dask.array as da
    from sklearn.linear_model import SGDClassifier
    from sklearn.preprocessing import StandardScaler

    from dask_kernels.io.parquet import _Parts

    parts = _Parts({(0,): ("file", [0], 1, None)}, (1,), "token")
    layer = _compat.blockwise(len, "x", "i", parts, "i", numblocks={}, _data_producer=True)
    return {
        "sklearn.base:BaseEstimator": StandardScaler(),
        "sklearn.linear_model:SGDClassifier": SGDClassifier,
        "dask.array:Array": da.zeros(3),
        "dask.blockwise:Blockwise": layer,
        "dask.blockwise:BlockwiseDepDict": parts,
        "dask.callbacks:Callback": _compat_callback(),
        "distributed.diagnostics.progressbar:TextProgressBar": _compat.TextProgressBar,
        "argparse:ArgumentParser": _subparsers(argparse.ArgumentParser()),
    }


def _subparsers(parser):
    parser.add_subparsers(dest="command")
    return parser


def _compat_callback():
    from dask.callbacks import Callback

    class Seen(Callback):
        states = []

        def _start_state(self, dsk, state):
            self.states.append(dict(state))

        def _finish(self, dsk, state, errored):
            self.states.append(dict(state))

    return Seen()


def test_private_attributes_exist():
    instances = _instances()
    assert set(instances) == set(_compat.PRIVATE_ATTRIBUTES)
    for where, names in _compat.PRIVATE_ATTRIBUTES.items():
        module, _, name = where.partition(":")
        obj = instances[where]
        cls = getattr(__import__(module, fromlist=[name]), name)
        assert obj is cls or isinstance(obj, cls), where
        for attr in names:
            assert hasattr(obj, attr), f"{where}.{attr} is gone"
    layer = instances["dask.blockwise:Blockwise"]  # as io/_layers.py's _reader_layer reads it
    assert layer.task.func is len and len(layer.io_deps) == 1
    assert next(iter(layer.io_deps.values())).mapping == {(0,): ("file", [0], 1, None)}


def test_local_scheduler_state_has_the_counted_keys():
    """_progress.PlainProgress counts a local computation's tasks from the state dask's
    scheduler hands to a callback's _start_state and _finish."""
    import dask

    callback = _compat_callback()
    with callback:
        dask.delayed(sum)([1, 2]).compute(scheduler="sync")
    assert len(callback.states) == 2
    for state in callback.states:
        assert {"finished", "ready", "waiting", "running"} <= set(state)


def test_zarr_sync_runs_a_store_coroutine(tmp_path):
    import zarr

    group = zarr.open_group(str(tmp_path / "g"), mode="w")
    group.create_array("a", shape=(4,), chunks=(2,), dtype="f8")[:] = 1.0
    assert _compat.zarr_sync(group.store.exists("a/zarr.json"))
    assert not _compat.zarr_sync(group.store.exists("a/nothing"))


def test_pyproject_bounds_are_the_tested_ones_and_the_installed_versions_lie_within():
    deps = _dependencies()
    for name, spec in _compat.TESTED.items():
        assert name in deps, f"{name} is not a declared dependency"
        assert str(deps[name].specifier) == str(Requirement(f"{name}{spec}").specifier), name
        assert deps[name].specifier.contains(version(name), prereleases=True), (name, version(name), spec)


# import name -> distribution name, where they differ
_DIST = {"sklearn": "scikit-learn", "yaml": "pyyaml"}
# imported only where their host already runs (Jupyter's display machinery) and guarded there
_OPTIONAL = {"IPython", "ipywidgets"}


def _third_party_imports():
    import sys

    names = set()
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(folder, f)) as fh:
                    tree = ast.parse(fh.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        names.update(a.name.split(".")[0] for a in node.names)
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "dask_kernels"} - _OPTIONAL


def test_every_imported_third_party_package_is_declared():
    declared = set(_dependencies())
    missing = {_DIST.get(n, n) for n in _third_party_imports()} - declared
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"


#: Modules of other libraries that are internals though their names have no underscore.
INTERNAL_MODULES = (["numba", "core"], ["zarr", "core"], ["dask", "highlevelgraph"], ["dask", "blockwise"],
                    ["distributed", "diagnostics", "progressbar"])


def test_no_private_import_of_another_library_outside_compat():
    offenders = []
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            path = os.path.join(folder, f)
            if not f.endswith(".py") or path == _compat.__file__:
                continue
            with open(path) as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                mods = []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                for m in mods:
                    parts = m.split(".")
                    private = any(p.startswith("_") for p in parts) or \
                        any(parts[:len(internal)] == internal for internal in INTERNAL_MODULES)
                    if parts[0] not in ("dask_kernels", "__future__") and private:
                        offenders.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {m}")
    assert not offenders, offenders
