"""Fitted arrays beside a spec: a content-addressed sidecar of named NumPy arrays.

A spec stays small JSON. A map that learns large arrays from data (Nystroem: landmarks and the
normalization) records in its spec state a *manifest*::

    {"format": "dk-sidecar-1", "sha256": "<hex>",
     "arrays": {"landmarks": {"shape": [m, d], "dtype": "<f8"}, ...}}

and the arrays themselves live beside the spec: in a feature store (Zarr subgroup
``fitted``), in a saved model (``feature_map.npz``), or in an ``.npz`` next to a spec file
(:func:`dask_kernels.maps.save_map` / :func:`~dask_kernels.maps.load_map`). :func:`dask_kernels.from_spec` takes them with
``arrays=`` and verifies them against the manifest.

The hash is sha256 over, for each array in name order: the name, the dtype string, the shape
and the C-order bytes (little-endian dtypes only), so it does not depend on how the arrays were
stored. Loading is bounded and validated: no pickle; the member names, shapes and dtypes are
checked against the manifest before anything is allocated; the manifest itself is checked by
the map against the spec's own fields (a landmark count and input width it cannot exceed).

In a Dask graph the arrays travel as one shared key (:func:`graph_arrays`): each task refers to
it by name, so the graph holds them once whatever the number of blocks, and a distributed
worker fetches them once.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ._npz import read_arrays, save_npz

if TYPE_CHECKING:
    from dask.delayed import Delayed

    from .maps.base import FeatureMap

#: Named arrays: what a sidecar holds.
Arrays = Mapping[str, np.ndarray]

SIDECAR_FORMAT = "dk-sidecar-1"

#: dtypes a sidecar may hold (plain little-endian numbers: no objects, no pickle).
ALLOWED_DTYPES = ("<f8", "<f4", "<i8", "<i4", "|u1")

#: Upper bound on what a manifest may declare (bytes): a corrupt spec cannot make us allocate
#: more than this.
MAX_BYTES = 2**36


class SidecarError(ValueError):
    """A sidecar is missing, malformed, or does not match the spec's manifest."""


def _canonical(a):
    a = np.asarray(a)
    if a.dtype.str not in ALLOWED_DTYPES:
        raise SidecarError(f"sidecar arrays must have one of the dtypes {ALLOWED_DTYPES}, got {a.dtype.str}")
    return np.ascontiguousarray(a)


def digest(arrays: Arrays) -> str:
    """sha256 (hex) of named arrays, independent of how they are stored."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = _canonical(arrays[name])
        h.update(json.dumps([name, a.dtype.str, list(a.shape)]).encode())
        h.update(b"\0")
        h.update(a.data if a.size else b"")
    return h.hexdigest()


def manifest(arrays: Arrays) -> dict[str, Any]:
    """The manifest a spec records for ``arrays`` (a dict of name -> ndarray)."""
    arrays = {k: _canonical(v) for k, v in arrays.items()}
    return {
        "format": SIDECAR_FORMAT,
        "sha256": digest(arrays),
        "arrays": {k: {"shape": [int(s) for s in a.shape], "dtype": a.dtype.str} for k, a in sorted(arrays.items())},
    }


def check_manifest(man: Any, layout: Mapping[str, tuple[tuple[int, ...], str]],
                   where: str = "spec['state']['sidecar']") -> dict[str, Any]:
    """Validate a manifest read from a file against ``layout`` (name -> (shape, dtype str)),
    which the map derives from the spec's own fields. Returns the manifest."""
    if not isinstance(man, dict) or man.get("format") != SIDECAR_FORMAT:
        raise SidecarError(f"{where}: not a {SIDECAR_FORMAT} manifest")
    sha = man.get("sha256")
    if not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        raise SidecarError(f"{where}['sha256']: expected 64 lowercase hex digits")
    declared = man.get("arrays")
    if not isinstance(declared, dict) or set(declared) != set(layout):
        raise SidecarError(f"{where}['arrays']: expected arrays {sorted(layout)}, "
                           f"found {sorted(declared) if isinstance(declared, dict) else declared!r}")
    total = 0
    for name, (shape, dtype) in layout.items():
        got = declared[name]
        if not isinstance(got, dict) or list(got.get("shape", ())) != list(shape) or got.get("dtype") != dtype:
            raise SidecarError(f"{where}['arrays'][{name!r}]: expected shape {list(shape)} dtype {dtype}, "
                               f"found {got!r}")
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if total > MAX_BYTES:
        raise SidecarError(f"{where}: declares {total} bytes of arrays, more than the limit {MAX_BYTES}")
    return man


def verify(arrays: Any, man: Mapping[str, Any], where: str = "sidecar") -> dict[str, np.ndarray]:
    """Check names, shapes, dtypes and the hash of ``arrays`` against a checked manifest."""
    if not isinstance(arrays, collections.abc.Mapping):
        raise SidecarError(f"{where}: expected a mapping of name -> array, got {type(arrays).__name__}")
    if set(arrays) != set(man["arrays"]):
        raise SidecarError(f"{where}: holds arrays {sorted(arrays)}, the spec expects {sorted(man['arrays'])}")
    out = {}
    for name, decl in man["arrays"].items():
        a = np.asarray(arrays[name])
        if list(a.shape) != list(decl["shape"]) or a.dtype.str != decl["dtype"]:
            raise SidecarError(f"{where}: array {name!r} has shape {list(a.shape)} dtype {a.dtype.str}, the spec "
                               f"expects {decl['shape']} {decl['dtype']}")
        out[name] = a
    if digest(out) != man["sha256"]:
        raise SidecarError(f"{where}: the arrays' sha256 does not match the spec's (tampered, or from another "
                           "fit): refusing them")
    return out


# -- .npz files ----------------------------------------------------------------------------------
def write_npz(path: str | os.PathLike, arrays: Arrays) -> str:
    """Write named arrays to ``path`` (.npz, no pickle, no metadata member: the manifest is in
    the spec) atomically: :func:`dask_kernels._npz.save_npz`."""
    path = os.fspath(path)
    save_npz(path, {k: _canonical(v) for k, v in arrays.items()})
    return path


def read_npz(path: str | os.PathLike, man: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Read and verify the arrays of a checked manifest from an .npz file.

    The file must hold exactly the manifest's members; each member's header (shape, dtype,
    byte size) is checked against the manifest before its data is read, and pickled members
    are refused (:func:`dask_kernels._npz.read_arrays`); then the arrays' digest.
    """
    path = os.fspath(path)
    try:
        arrays = read_arrays(path, man["arrays"])
    except OSError as e:
        raise SidecarError(f"{path}: cannot open the sidecar ({e})") from None
    except ValueError as e:
        raise SidecarError(str(e)) from None
    return verify(arrays, man, where=path)


# -- Zarr groups (inside a feature store) --------------------------------------------------------
ZARR_GROUP = "fitted"


def write_group(group: Any, arrays: Arrays) -> Any:
    """Write named arrays into subgroup ``fitted`` of a Zarr group (replacing what we wrote)."""
    arrays = {k: _canonical(v) for k, v in arrays.items()}
    sub = group.require_group(ZARR_GROUP)
    for name, a in arrays.items():
        arr = sub.create_array(name, shape=a.shape, dtype=a.dtype, chunks=a.shape or (1,), overwrite=True)
        arr[...] = a
    sub.attrs["dask_kernels_sidecar"] = manifest(arrays)
    return sub


def read_group(group: Any, man: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """Arrays of a checked manifest from subgroup ``fitted`` of a Zarr group, or None if the
    group has none. Shapes and dtypes are checked from the metadata before reading."""
    if ZARR_GROUP not in group.group_keys():
        return None
    sub = group[ZARR_GROUP]
    where = f"{getattr(group.store, 'root', '')} {ZARR_GROUP}/".strip()
    names = set(sub.array_keys())
    if names != set(man["arrays"]):
        raise SidecarError(f"{where}: holds arrays {sorted(names)}, the spec expects {sorted(man['arrays'])}")
    arrays = {}
    for name, decl in man["arrays"].items():
        arr = sub[name]
        if list(arr.shape) != list(decl["shape"]) or np.dtype(arr.dtype).str != decl["dtype"]:
            raise SidecarError(f"{where}{name}: is {list(arr.shape)} {np.dtype(arr.dtype).str}, the spec expects "
                               f"{decl['shape']} {decl['dtype']}")
        arrays[name] = np.asarray(arr[...])
    return verify(arrays, man, where=where)


# -- maps ----------------------------------------------------------------------------------------
def map_arrays(fmap: FeatureMap) -> dict[str, np.ndarray] | None:
    """The fitted arrays of a map that has a sidecar (name -> ndarray), else None."""
    fn = getattr(fmap, "sidecar_arrays", None)
    return fn() if fn is not None else None


def attach(fmap: FeatureMap, state: Mapping[str, Any], arrays: Any) -> FeatureMap:
    """``from_spec`` hook: give a rebuilt map its verified sidecar arrays.

    ``arrays`` is a mapping, an .npz path, a Zarr group (its ``fitted`` subgroup), or None.
    A spec with a manifest needs them; a spec without one refuses them.
    """
    man = state.get("sidecar") if isinstance(state, dict) else None
    if man is None:
        if arrays is not None:
            raise SidecarError(f"spec of method {fmap.method!r} has no sidecar manifest, but arrays were given")
        return fmap
    if arrays is None:
        raise SidecarError(f"spec of method {fmap.method!r} records fitted arrays (sha256 "
                           f"{str(man.get('sha256'))[:12]}...) in a sidecar: pass them with from_spec(spec, "
                           "arrays=...) (a saved model, a feature store and load_map do this)")
    man = check_manifest(man, fmap._sidecar_layout())
    if isinstance(arrays, (str, os.PathLike)):
        arrays = read_npz(arrays, man)
    elif hasattr(arrays, "group_keys"):
        got = read_group(arrays, man)
        if got is None:
            raise SidecarError(f"Zarr group {arrays} has no {ZARR_GROUP!r} subgroup with the fitted arrays")
        arrays = got
    else:
        arrays = verify(arrays, man)
    fmap._set_sidecar_arrays(arrays)
    return fmap


def store_arrays(group: Any) -> Any | None:
    """``FeatureStore.feature_map`` hook: the store's Zarr group if it holds a sidecar, else None."""
    return group if ZARR_GROUP in group.group_keys() else None


def model_arrays(path: str | os.PathLike) -> str | None:
    """``load_model`` hook: the saved model's sidecar file if present, else None."""
    p = os.path.join(os.fspath(path), "feature_map.npz")
    return p if os.path.exists(p) else None


def save_model_arrays(fmap: FeatureMap | None, path: str | os.PathLike) -> None:
    """``KernelModel.save`` hook: write ``feature_map.npz`` into the model directory if needed."""
    arrays = None if fmap is None else map_arrays(fmap)
    if arrays is not None:
        write_npz(os.path.join(os.fspath(path), "feature_map.npz"), arrays)


def beside(spec_path: str | os.PathLike) -> str | None:
    """The .npz next to a spec file (``x.json`` -> ``x.npz``) if it exists, else None."""
    p = os.path.splitext(os.fspath(spec_path))[0] + ".npz"
    return p if os.path.exists(p) else None


# -- Dask ------------------------------------------------------------------------------------------
def graph_arrays(fmap: FeatureMap) -> Delayed | None:
    """The map's fitted arrays as ONE shared Dask key (a Delayed), or None without a sidecar.

    Tasks take it as an argument: the graph holds the arrays once, whatever the number of
    blocks, and a distributed worker receives them once. On a distributed Client the arrays are
    scattered first (the graph then holds only the future's key, not the bytes); otherwise they
    are one literal key named after their hash.
    """
    arrays = map_arrays(fmap)
    if arrays is None:
        return None
    from ._graph import shared_key

    sha = fmap.spec()["state"]["sidecar"]["sha256"]
    return shared_key(arrays, f"dk-fitted-{sha[:24]}")
