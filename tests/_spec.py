"""Specs edited the way a user or an attacker could edit the JSON file, and the maps whose specs
keep a learned input scale."""

import json


def tampered(spec, path, value):
    """A deep copy of ``spec`` with the entry at ``path`` (a tuple of keys/indices) set to
    ``value``, or removed when ``value`` is ``KeyError``."""
    spec = json.loads(json.dumps(spec))
    *parents, last = path
    node = spec
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return spec


def sidecar(fmap):
    """The arrays kept beside a map's spec (Nystroem's landmarks), or None."""
    return fmap.sidecar_arrays() if hasattr(fmap, "sidecar_arrays") else None


def scaled_maps(scale, k):
    """``{method: factory}`` of the five maps that take ``scale=``, unfitted, with ``k`` features
    (GCWS ``2 k`` hashes)."""
    from dask_kernels import GCWS, NRFF, RFF, Fastfood, Nystroem

    return {"gcws": lambda: GCWS(n_components=2 * k, scale=scale),
            "rff": lambda: RFF(n_components=k, scale=scale, gamma="scale"),
            "nrff": lambda: NRFF(n_components=k, scale=scale),
            "fastfood": lambda: Fastfood(n_components=k, scale=scale),
            "nystroem": lambda: Nystroem(n_components=k, scale=scale, dtype="float64")}
