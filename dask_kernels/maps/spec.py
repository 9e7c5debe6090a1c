"""Specs to maps: the registry of feature-map methods, :func:`from_spec`, and maps saved as files.

The package's maps are listed here by method (:data:`BUILTIN_METHODS`); a map's module is
imported when a spec or a command names its method (:func:`map_class`), and every one by
:func:`registered_maps`, so both know all of them whatever was imported before, while loading a
GCWS model does not import the five other maps (their modules, tables and Numba dispatchers).
A :class:`FeatureMap` subclass defined elsewhere (a user's own method) registers itself when its
class is defined.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._files import MAX_JSON_BYTES, file_problem
from .._lazy import lazy_attributes
from .._params import declared_constraints, validate_params
from ..blocks import MAX_FEATURES_IN
from ..rng import RNG_SCHEME
from ..sidecar import attach as attach_sidecar
from ..sidecar import beside, map_arrays, write_npz
from .base import _REGISTRY, FeatureMap

#: The maps of the package: method -> class name (each registered under its method when defined).
BUILTIN_METHODS = {"core": "CoRE", "fastfood": "Fastfood", "gcws": "GCWS", "nrff": "NRFF", "nystroem": "Nystroem",
                   "rff": "RFF"}
#: Their modules, imported on first use (:mod:`dask_kernels._lazy`).
_LAZY = {"CoRE": ".core", "Fastfood": ".fastfood", "GCWS": ".gcws", "NRFF": ".nrff", "Nystroem": ".nystroem",
         "RFF": ".rff"}

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

#: Spec versions :func:`from_spec` reads.
KNOWN_SPEC_VERSIONS = (1,)


def map_class(method: str) -> type[FeatureMap] | None:
    """The class registered for feature-map ``method`` (for a map of the package, its module is
    imported first), or None."""
    if not isinstance(method, str):
        return None
    name = BUILTIN_METHODS.get(method)
    if name is not None and name not in globals():
        __getattr__(name)  # importing the module defines, and so registers, the class
    return _REGISTRY.get(method)


def registered_maps() -> dict[str, type[FeatureMap]]:
    """Names of all registered feature-map methods, mapped to their classes."""
    for method in BUILTIN_METHODS:
        map_class(method)
    return dict(_REGISTRY)


def _key_error(key, message):
    return ValueError(f"feature-map spec{key}: {message}")


def _spec_int(spec, key, lo, hi):
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise _key_error(f"[{key!r}]", f"expected an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def from_spec(spec: Mapping[str, Any] | str | bytes, arrays: Any = None) -> FeatureMap:
    """Rebuild a fitted feature map from :meth:`FeatureMap.spec` (a dict or JSON text).

    ``arrays``: the fitted arrays of a map whose spec records a sidecar (e.g. Nystroem): a
    mapping, an .npz path or a Zarr group; verified against the spec (:mod:`dask_kernels.sidecar`).

    Every field that reaches a kernel is checked first, and a bad one raises ``ValueError``
    naming its key: ``spec_version`` and ``rng_scheme`` must be ones this version implements,
    ``method`` a registered map, ``params`` pass the map's own parameter validation,
    ``n_features_in`` is an integer in [1, 2**31] within the map's bounds for that width
    (:mod:`dask_kernels.maps._bounds`: e.g. a dense projection matrix of at most 2 GiB), ``state``
    passes the map's ``_validate_state`` (lengths, dtypes, finiteness), and ``n_output_features``
    and ``output_dtype`` match the rebuilt map.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import RFF, from_spec
    >>> spec = RFF(n_components=8).fit(np.zeros((1, 3))).spec()
    >>> from_spec(spec).n_output_features_
    8
    >>> from_spec({**spec, "n_features_in": 0})
    Traceback (most recent call last):
    ...
    ValueError: feature-map spec['n_features_in']: expected an integer in [1, 2147483648], got 0
    """
    if isinstance(spec, (str, bytes, bytearray)):
        try:
            spec = json.loads(spec)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"feature-map spec is not valid JSON: {e}") from None
    if not isinstance(spec, dict):
        raise ValueError(f"feature-map spec must be a JSON object (dict), got {type(spec).__name__}")
    for key in ("spec_version", "rng_scheme", "method", "params", "n_features_in", "n_output_features",
                "output_dtype", "state"):
        if key not in spec:
            raise _key_error(f"[{key!r}]", "missing")
    version = spec["spec_version"]
    if isinstance(version, bool) or version not in KNOWN_SPEC_VERSIONS:
        raise _key_error("['spec_version']", f"{version!r} is not a version this dask_kernels reads "
                         f"({', '.join(map(str, KNOWN_SPEC_VERSIONS))})")
    if spec["rng_scheme"] != RNG_SCHEME:
        raise _key_error("['rng_scheme']", f"spec uses random-number scheme {spec['rng_scheme']!r}, this version "
                         f"of dask_kernels implements {RNG_SCHEME!r}: features would differ")
    method = spec["method"]
    cls = map_class(method)
    if cls is None:
        raise _key_error("['method']", f"unknown feature-map method {method!r}; known: {sorted(registered_maps())}")
    params = spec["params"]
    if not isinstance(params, dict):
        raise _key_error("['params']", f"expected an object, got {type(params).__name__}")
    names = cls._get_param_names()
    constraints = declared_constraints(cls)
    for key, value in params.items():
        if key not in names:
            raise _key_error(f"['params'][{key!r}]", f"{cls.__name__} has no such parameter; it takes {names}")
        if key in constraints:
            try:
                validate_params({key: constraints[key]}, {key: value}, cls.__name__)
            except ValueError as e:  # scikit-learn's InvalidParameterError
                raise _key_error(f"['params'][{key!r}]", str(e)) from None
    fmap = cls(**{**cls._spec_omitted, **params})  # a parameter the spec predates: its value then
    try:
        fmap._validate_params_extra()
    except ValueError as e:
        raise _key_error("['params']", str(e)) from None
    fmap.n_features_in_ = _spec_int(spec, "n_features_in", 1, MAX_FEATURES_IN)
    state = spec["state"]
    if not isinstance(state, dict):
        raise _key_error("['state']", f"expected an object, got {type(state).__name__}")
    fmap._validate_state(state)
    fmap._set_fitted_state(state)
    attach_sidecar(fmap, state, arrays)  # verify and attach fitted arrays kept beside the spec
    try:  # the bounds of this width (after the sidecar: it may hold the feature ids)
        fmap._check_width(fmap.n_features_in_)
    except ValueError as e:
        raise _key_error("['n_features_in']", str(e)) from None
    try:
        fmap._check_tables()
    except ValueError as e:  # it names the parameter
        raise ValueError(f"feature-map spec: {e}") from None
    fmap.is_fitted_ = True
    width = spec["n_output_features"]
    if isinstance(width, bool) or width != int(fmap.n_output_features_):
        raise _key_error("['n_output_features']", f"{width!r} does not match the rebuilt map's output width "
                         f"{int(fmap.n_output_features_)}")
    dtype = np.dtype(fmap.output_dtype_).str
    if spec["output_dtype"] != dtype:
        raise _key_error("['output_dtype']", f"{spec['output_dtype']!r} does not match the rebuilt map's {dtype!r}")
    return fmap



def save_map(fmap: FeatureMap, path: str | os.PathLike) -> str:
    """Write a fitted map as ``path`` (spec JSON) plus, if it has fitted arrays, an .npz beside it.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from dask_kernels import Nystroem
    >>> from dask_kernels.maps import load_map, save_map
    >>> X = np.random.default_rng(0).random((50, 4))
    >>> ny = Nystroem(n_components=8, kernel="rbf", seed=1).fit(X)
    >>> path = save_map(ny, os.path.join(tempfile.mkdtemp(), "ny.json"))
    >>> bool(np.array_equal(load_map(path).transform(X), ny.transform(X)))
    True
    """
    path = os.fspath(path)
    arrays = map_arrays(fmap)
    if arrays is not None:
        write_npz(os.path.splitext(path)[0] + ".npz", arrays)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(fmap.spec_json())
    os.replace(tmp, path)
    return path


def load_map(path: str | os.PathLike) -> FeatureMap:
    """Rebuild a map written by :func:`save_map` (spec JSON and its .npz sidecar, verified)."""
    problem = file_problem(path, MAX_JSON_BYTES)  # a FIFO would block the read, a device never end it
    if problem is not None:
        raise ValueError(f"{os.fspath(path)} {problem}: not a map spec file; refusing to read it")
    with open(path, "rb") as f:
        spec = json.loads(f.read())
    return from_spec(spec, arrays=beside(path))
