"""Explicit feature ids for the Fourier maps: compute a chosen subset of features.

With the counter-based random numbers every parameter of feature ``j`` (frequency column,
phase, radius) is a pure function of ``(seed, j)``, so a map can be built from any list of
feature ids instead of ``0 .. k-1``: ``RFF(n_components=3, feature_ids=[7, 2, 40])`` computes
the columns 7, 2 and 40 of the map with ids ``0 .. 40``, from the same random numbers. Only the
normalization follows the output width (``sqrt(2 / k)``, k = ``len(feature_ids)``), so the
subset is itself a kernel estimate. This is what random feature selection
(:mod:`dask_kernels.select`) keeps: a list of ids, never parameter matrices.

The spec layer: a map without ``feature_ids`` (or ``density``) writes exactly the spec it wrote
before these parameters existed (parameters at their default are left out of the spec). A short
id list is part of ``spec["params"]``; a list of more than :data:`SPEC_MAX_IDS` ids is stored
beside the spec in a content-addressed sidecar (:mod:`dask_kernels.sidecar`): the spec then says
``"feature_ids": "sidecar"`` and records the manifest in ``spec["state"]["sidecar"]``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._params import StrOptions

from ..rng import bits, index_keys_of, normal_of_key, unit64
from ..sidecar import manifest

#: Longest id list written into a spec's JSON; longer lists go to the sidecar.
SPEC_MAX_IDS = 256
#: Feature ids are non-negative and below 2**63 (they are stored as int64).
MAX_FEATURE_ID = 2**63 - 1
#: The spec's value of ``feature_ids`` when the ids live in the sidecar.
IN_SIDECAR = "sidecar"

FEATURE_IDS_CONSTRAINT = {"feature_ids": [None, "array-like", StrOptions({IN_SIDECAR})]}


def check_feature_ids(ids, n_components: int, where: str = "feature_ids") -> np.ndarray:
    """The validated ids as a 1-D int64 array: integers in ``[0, 2**63)``, distinct, exactly
    ``n_components`` of them. Raises ``ValueError`` naming the first offending position."""
    a = np.asarray(ids)
    if a.ndim != 1:
        raise ValueError(f"{where} must be a 1-D list of integers, got shape {a.shape}")
    if a.size and not (np.issubdtype(a.dtype, np.integer) and a.dtype != np.bool_):
        raise ValueError(f"{where} must hold integers, got dtype {a.dtype}")
    if a.size != n_components:
        raise ValueError(f"{where} has {a.size} ids but n_components={n_components}: they must agree "
                         "(the output width is the number of ids)")
    if a.dtype.kind == "u":
        bad = np.flatnonzero(a > MAX_FEATURE_ID)
    else:
        bad = np.flatnonzero(a < 0)
    if bad.size:
        raise ValueError(f"{where}[{bad[0]}] = {a[bad[0]]} is not a feature id in [0, 2**63)")
    a = a.astype(np.int64)
    order = np.argsort(a, kind="stable")
    dup = np.flatnonzero(a[order][1:] == a[order][:-1])
    if dup.size:
        j = int(order[dup[0] + 1])
        raise ValueError(f"{where}[{j}] = {a[j]} repeats an earlier id: ids must be distinct")
    return a


class FeatureIds:
    """Mixin of the Fourier maps for the ``feature_ids`` parameter (spec, sidecar, validation).

    The class lists in ``_optional_params`` the parameters (name -> default) a spec leaves out
    when they are at their default, so that older specs stay byte-identical.
    """

    _optional_params = {"feature_ids": None}

    # -- the ids ------------------------------------------------------------------------------
    def _validate_params_extra(self):
        super()._validate_params_extra()
        if self.feature_ids is not None and not isinstance(self.feature_ids, str):
            check_feature_ids(self.feature_ids, int(self.n_components))

    def _fit(self, X):
        if isinstance(self.feature_ids, str):
            raise ValueError(f"feature_ids={IN_SIDECAR!r} only appears in a spec whose ids are in its sidecar; "
                             "pass the ids themselves")
        super()._fit(X)

    def feature_ids_or_range(self) -> np.ndarray:
        """The map's feature ids as uint64: ``feature_ids``, or ``0 .. n_components-1``."""
        if self.feature_ids is None:
            return np.arange(int(self.n_components), dtype=np.uint64)
        return np.asarray(self.feature_ids, dtype=np.int64).astype(np.uint64)

    def _ids_in_sidecar(self):
        return self.feature_ids is not None and len(self.feature_ids) > SPEC_MAX_IDS

    def _ids_array(self):
        return check_feature_ids(self.feature_ids, int(self.n_components))

    # -- spec ---------------------------------------------------------------------------------
    def spec(self):
        spec = super().spec()
        params = spec["params"]
        for name, default in self._optional_params.items():
            if name in params and params[name] == default:
                del params[name]
        if self._ids_in_sidecar():
            params["feature_ids"] = IN_SIDECAR
        return spec

    def _fitted_state(self):
        state = super()._fitted_state()
        if self._ids_in_sidecar():
            state["sidecar"] = manifest(self.sidecar_arrays())
        return state

    def _validate_state(self, state):
        state = dict(state)
        man = state.pop("sidecar", None)
        if (man is not None) != isinstance(self.feature_ids, str):
            raise ValueError("feature-map spec['state']['sidecar']: present exactly when "
                             f"spec['params']['feature_ids'] is {IN_SIDECAR!r}")
        if man is not None and int(self.n_components) <= SPEC_MAX_IDS:
            raise ValueError(f"feature-map spec['params']['n_components']: {self.n_components} ids belong in the "
                             f"spec itself (the sidecar holds lists of more than {SPEC_MAX_IDS})")
        super()._validate_state(state)

    # -- sidecar hooks (see dask_kernels.sidecar) ---------------------------------------------
    def sidecar_arrays(self) -> dict | None:
        """``{"feature_ids": int64 array}`` when the ids are kept beside the spec, else None."""
        if not self._ids_in_sidecar():
            return None
        return {"feature_ids": self._ids_array()}

    def _sidecar_layout(self):
        return {"feature_ids": ((int(self.n_components),), "<i8")}

    def _set_sidecar_arrays(self, arrays):
        self.feature_ids = check_feature_ids(arrays["feature_ids"], int(self.n_components),
                                             where="sidecar array 'feature_ids'")


# -- parameter tables of given feature ids ---------------------------------------------------------
# The same formulas as _fourier.normal_table / cauchy_table / uniform_phases with index j taken
# from ``ids`` instead of range(k): for ids = 0..k-1 the values are bitwise identical (tested).


@njit(nogil=True, cache=True)
def normal_columns(seed, stream, ids, d, scale, out):
    """``out[i, c] = scale * rng.normal(seed, stream, index=ids[c], counter=i)``, a (d, len(ids)) table."""
    keys = index_keys_of(seed, stream, ids)
    for i in range(d):
        for c in range(ids.size):
            out[i, c] = scale * normal_of_key(keys[c], i)
    return out


@njit(nogil=True, cache=True)
def cauchy_columns(seed, stream, ids, d, scale, out):
    """``out[i, c] = scale * tan(pi (u - 1/2))``, u = ``rng.uniform(seed, stream, ids[c], i)``."""
    keys = index_keys_of(seed, stream, ids)
    for i in range(d):
        for c in range(ids.size):
            out[i, c] = scale * np.tan(np.pi * (unit64(bits(keys[c], np.uint64(i))) - 0.5))
    return out


@njit(nogil=True, cache=True)
def phases_of(seed, stream, ids):
    """``phase[c] = 2 pi * unit64(bits(index_key(stream_key(seed, stream), ids[c]), 0))``."""
    keys = index_keys_of(seed, stream, ids)
    out = np.empty(ids.size)
    for c in range(ids.size):
        out[c] = 2.0 * np.pi * unit64(bits(keys[c], np.uint64(0)))
    return out
