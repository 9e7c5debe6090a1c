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


def assert_same_spec_for_any_chunking(make, rows, chunks):
    """``make()`` fitted on ``rows`` whole and as a dask array of each row chunk size in ``chunks``
    gives the same spec, and the map rebuilt from that spec (and its sidecar arrays) transforms
    ``rows`` to the same bytes."""
    import dask.array as da

    from dask_kernels import from_spec

    whole = make().fit(rows)
    for chunk in chunks:
        assert make().fit(da.from_array(rows, chunks=(chunk, -1))).spec_json() == whole.spec_json()
    again = from_spec(json.loads(whole.spec_json()), arrays=sidecar(whole))
    assert again.transform(rows).tobytes() == whole.transform(rows).tobytes()


def scaled_maps(scale, k):
    """``{method: factory}`` of the five maps that take ``scale=``, unfitted, with ``k`` features
    (GCWS ``2 k`` hashes)."""
    from dask_kernels import GCWS, NRFF, RFF, Fastfood, Nystroem

    return {"gcws": lambda: GCWS(n_components=2 * k, scale=scale),
            "rff": lambda: RFF(n_components=k, scale=scale, gamma="scale"),
            "nrff": lambda: NRFF(n_components=k, scale=scale),
            "fastfood": lambda: Fastfood(n_components=k, scale=scale),
            "nystroem": lambda: Nystroem(n_components=k, scale=scale, dtype="float64")}
