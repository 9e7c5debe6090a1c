"""Appending rows to a feature store: the store's first rows fix its map, and every later
segment must be featurized with it (see ``featurize(..., mode="append")``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .layout import open_checked
from .location import inspect_path, refuse_foreign
from .store import open_store
from .fingerprint import differences

if TYPE_CHECKING:  # names used only in annotations
    from ..maps.base import FeatureMap


def append_target(path, storage_options, fmap, columns, classes=None, feature_names=None):
    """The attributes of the store rows are appended to (None: no store yet, the first rows
    create it). Refuses a store whose spec or columns differ, whose labels are class names
    where the new rows' are numbers (or the reverse), or which is unfinished. A segment may
    bring classes the store has not seen: each segment keeps its own class names."""
    kind, detail = inspect_path(path, storage_options)
    if kind in ("absent", "empty"):
        return None
    if kind == "foreign":
        refuse_foreign(path, detail)
    g, info = open_checked(path, storage_options, consolidated=False)
    diff = differences(info["spec"], fmap.spec())
    if diff:
        raise ValueError(f"{path}: cannot append rows featurized by another map; what differs: {'; '.join(diff)} "
                         "(stored vs now). Append with the store's map (open_store(path).feature_map).")
    if sorted(info["fingerprint"].get("columns", [])) != sorted(columns):
        raise ValueError(f"{path}: the store holds columns {sorted(info['fingerprint'].get('columns', []))}, the "
                         f"appended rows have {sorted(columns)}; every segment must have the same columns")
    if "labels" in columns and ("classes" in info["fingerprint"]) != (classes is not None):
        what = ("class names", "numbers") if classes is None else ("numbers", "class names")
        raise ValueError(f"{path}: the store's labels are {what[0]}, the appended rows' are {what[1]}; every "
                         "segment's labels must be of the same kind")
    stored = info["fingerprint"].get("feature_names")
    if stored is not None and feature_names is not None and list(feature_names) != stored:
        raise ValueError(f"{path}: the store's rows have input columns {stored}, the appended rows {list(feature_names)}; "
                         "select the appended rows' columns in the store's order (e.g. ddf[open_store(path).feature_names])")
    if g.attrs.get("complete") is not True:
        raise ValueError(f"{path}: the store's first rows are not finished; re-run the featurize that created it "
                         "before appending")
    return info


def append_map(path: str, explicit: dict[str, Any], *, method: str | None = None,
               storage_options: dict | None = None) -> FeatureMap | None:
    """The map rows appended to the store at ``path`` must be featurized with: the store's own.

    A store's map is fixed by its first rows: its spec, including what it fitted (the centre
    of ``center="mean"``, computed on the first rows, not on each day's). ``explicit`` holds the
    parameters the caller named (and ``method`` the method, if named); one that conflicts with
    the store's is refused naming it; ``center="mean"`` agrees with any fitted centre. Returns
    None when there is no store yet (the first rows create it with a map of their own).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from dask_kernels import GCWS, featurize
    >>> path = tempfile.mkdtemp() + "/f.zarr"
    >>> X = np.arange(12.0).reshape(4, 3)
    >>> _ = featurize(X, GCWS(n_components=8, center=X.mean(axis=0).tolist()).fit(X[:1]), store=path, progress=False)
    >>> append_map(path, {"center": "mean", "n_components": 8}).center_.tolist()
    [4.5, 5.5, 6.5]
    """
    import json

    kind, detail = inspect_path(path, storage_options)
    if kind in ("absent", "empty"):
        return None
    if kind == "foreign":
        refuse_foreign(path, detail)
    stored = open_store(path, storage_options=storage_options, verify=False)
    spec = stored.spec
    conflicts = []
    if method is not None and method != spec["method"]:
        conflicts.append(f"method: {spec['method']} (stored) != {method} (now)")
    for name, value in sorted(explicit.items()):
        if name not in spec["params"]:
            conflicts.append(f"{name}: absent (stored) != {value!r} (now)")
            continue
        have = spec["params"][name]
        if name == "center" and value == "mean" and have is not None:
            continue  # the mean of the store's first rows
        if json.loads(json.dumps(have)) != json.loads(json.dumps(value)):
            shown = "a vector" if isinstance(have, list) else repr(have)
            conflicts.append(f"{name}: {shown} (stored) != {value!r} (now)")
    if conflicts:
        raise ValueError(f"{path}: appended rows are featurized with the store's map, which its first rows "
                         f"fixed; what you asked for differs: {'; '.join(conflicts)}. Drop the conflicting "
                         "parameters (or append to a new store)")
    return stored.feature_map
