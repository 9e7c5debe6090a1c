"""cos32: the stated error bound over the whole float32 domain, the libm fallback beyond it, and
specs: new float32 fits use cos32, a spec without the "cosine" key keeps numpy's cosine."""

import json

import numpy as np
import pytest

from dask_kernels import NRFF, RFF, Fastfood, from_spec
from dask_kernels.maps._cos32 import COS32_ABS_ERROR, COS32_MAX, cos32_array, cos32_row
from dask_kernels.maps.rff import projection


def _error(x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    return np.abs(cos32_array(x).astype(np.float64) - np.cos(x.astype(np.float64)))


def test_error_bound_over_every_binade_of_the_domain():
    # every 97th float32 bit pattern from 0 to 2**24: all binades, subnormals included, both signs
    top = int(np.float32(COS32_MAX).view(np.int32))
    worst = 0.0
    for start in range(0, top + 1, 97 * 2**22):
        bits = np.arange(start, min(start + 97 * 2**22, top + 1), 97, dtype=np.int32)
        x = bits.view(np.float32)
        worst = max(worst, _error(x).max(), _error(-x).max())
    assert worst <= COS32_ABS_ERROR, worst
    assert worst > 0.3 * COS32_ABS_ERROR  # the bound is not vacuous: the sweep gets near it


def test_error_bound_near_multiples_of_half_pi_and_at_the_edges():
    # the range reduction's hardest arguments: float32 neighbours of m pi / 2, up to 2**24
    m = np.unique(np.concatenate([np.arange(0, 5000), np.geomspace(1, 2**24 / (np.pi / 2), 20000).astype(np.int64)]))
    centre = (m * (np.pi / 2)).astype(np.float32)
    x = np.concatenate([np.nextafter(centre, np.float32(np.inf) * s) for s in (-1, 1)] + [centre])
    x = x[np.abs(x) <= COS32_MAX]
    edges = np.array(
        [0.0, 1e-45, 1.1754944e-38, np.pi / 4, np.pi / 2, np.pi, COS32_MAX, np.nextafter(COS32_MAX, np.float32(0))],
        dtype=np.float32,
    )
    for values in (x, -x, edges, -edges):
        assert _error(values).max() <= COS32_ABS_ERROR


def test_beyond_the_domain_the_row_kernel_falls_back_to_libm():
    x = np.array([1.0, 3.0e7, -1.0e30, 3.4e38, np.inf, -np.inf, np.nan, 2.0**24, 0.5], dtype=np.float32)
    out = np.empty_like(x)
    cos32_row(x, out, np.float32(2.0))
    with np.errstate(invalid="ignore"):
        exact = 2 * np.cos(x.astype(np.float64)).astype(np.float32)
    beyond = ~(np.abs(x) <= COS32_MAX)
    np.testing.assert_array_equal(out[beyond], exact[beyond])  # bitwise: libm, rounded
    assert np.all(np.abs(out[~beyond] - exact[~beyond]) <= 2 * COS32_ABS_ERROR + 1e-7)
    # the same values in a row without any out-of-domain value take the vectorized path
    inside = np.ascontiguousarray(x[~beyond])
    out2 = np.empty_like(inside)
    cos32_row(inside, out2, np.float32(2.0))
    np.testing.assert_array_equal(out2, out[~beyond])


X = np.random.default_rng(0).normal(size=(40, 24)).astype(np.float32)
MAPS = [
    RFF(n_components=1000, gamma=0.05, seed=1),
    NRFF(n_components=1000, gamma=2.0, seed=2),
    Fastfood(n_components=1000, gamma=0.05, seed=3),
]


def _legacy_features(fmap, X):
    """What float32 specs produced before cos32: numpy's cosine on the rounded argument."""
    factor = np.float32(np.sqrt(2.0 / fmap.n_components))
    if isinstance(fmap, Fastfood):
        arg = fmap.projection_block(X) + fmap._tables()[4]
        return np.cos(arg) * factor
    W, phase = fmap._tables()
    P = projection(X, W, np.float32)
    if isinstance(fmap, RFF):
        return np.cos(P + phase) * factor
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    Z = np.cos(P * (1.0 / norms).astype(np.float32)[:, None] + phase)
    return Z * (1.0 / np.sqrt(np.einsum("ij,ij->i", Z, Z).astype(np.float64))).astype(np.float32)[:, None]


@pytest.mark.parametrize("fmap", MAPS, ids=lambda m: type(m).__name__)
def test_new_fits_use_cos32_and_old_specs_keep_their_bytes(fmap):
    fmap = fmap.fit(X)
    spec = json.loads(fmap.spec_json())
    assert spec["state"]["cosine"] == "cos32"
    new = fmap.transform(X)
    # a spec written before cos32 has no "cosine" key: it must give exactly the old features
    old_spec = dict(spec, state={k: v for k, v in spec["state"].items() if k != "cosine"})
    old = from_spec(old_spec).transform(X)
    np.testing.assert_array_equal(old, _legacy_features(fmap, X))
    # and the two cosines agree to cos32's bound (times the output scale), plus rounding
    scale = np.abs(old).max() * 1.01
    assert np.abs(new - old).max() <= scale * (COS32_ABS_ERROR + 2e-7)
    assert not np.array_equal(new, old)  # the spec field matters: the bytes differ
    np.testing.assert_array_equal(from_spec(spec).transform(X), new)


def test_float64_specs_are_unchanged_and_bad_cosine_names_the_key():
    fmap = RFF(n_components=50, dtype="float64").fit(X)
    spec = fmap.spec()
    assert spec["state"] == {}  # byte-for-byte the spec of the previous version
    with pytest.raises(ValueError, match=r"spec\['state'\]\['cosine'\]"):
        from_spec(dict(spec, state={"cosine": "cos32"}))  # cos32 is float32 only
    spec32 = RFF(n_components=50).fit(X).spec()
    with pytest.raises(ValueError, match=r"spec\['state'\]\['cosine'\]"):
        from_spec(dict(spec32, state={"cosine": "fast"}))
