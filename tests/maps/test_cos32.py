"""cos32 and cos32v2: the stated error bounds over the whole float32 domain, the libm fallback
beyond it, vector lanes = scalar remainder, and specs: new float32 fits use cos32v2, a spec that
says "cos32" keeps cos32's bytes, a spec without the "cosine" key keeps numpy's cosine."""

import hashlib

import json

import numpy as np
import pytest
from _blas_rounding import assert_same_features

from dask_kernels import NRFF, RFF, Fastfood, from_spec
from dask_kernels.maps._cos32 import COS32_ABS_ERROR, COS32_MAX, COS32V2_ABS_ERROR, cos32_array, cos32_row
from dask_kernels.maps._cos32 import affine_cos32_rows, affine_cos32v2, cos32v2_array, cos32v2_into
from dask_kernels.maps._cos32 import shift_cos32v2, shift_cos32v2_rows
from dask_kernels.maps.rff import projection


COSINE_FUNCS = {"cos32": (cos32_array, COS32_ABS_ERROR), "cos32v2": (cos32v2_array, COS32V2_ABS_ERROR)}


def _error(x, name="cos32"):
    x = np.ascontiguousarray(x, dtype=np.float32)
    return np.abs(COSINE_FUNCS[name][0](x).astype(np.float64) - np.cos(x.astype(np.float64)))


@pytest.mark.parametrize("name", list(COSINE_FUNCS))
def test_error_bound_over_every_binade_of_the_domain(name):
    # every 97th float32 bit pattern from 0 to 2**24: all binades, subnormals included, both signs
    top = int(np.float32(COS32_MAX).view(np.int32))
    worst = 0.0
    for start in range(0, top + 1, 97 * 2**22):
        bits = np.arange(start, min(start + 97 * 2**22, top + 1), 97, dtype=np.int32)
        x = bits.view(np.float32)
        worst = max(worst, _error(x, name).max(), _error(-x, name).max())
    bound = COSINE_FUNCS[name][1]
    assert worst <= bound, worst
    assert worst > 0.3 * bound  # the bound is not vacuous: the sweep gets near it


@pytest.mark.parametrize("name", list(COSINE_FUNCS))
def test_error_bound_near_multiples_of_half_pi_and_at_the_edges(name):
    # the range reduction's hardest arguments: float32 neighbours of m pi / 2, up to 2**24
    m = np.unique(np.concatenate([np.arange(0, 5000), np.geomspace(1, 2**24 / (np.pi / 2), 20000).astype(np.int64)]))
    centre = (m * (np.pi / 2)).astype(np.float32)
    x = np.concatenate([np.nextafter(centre, np.float32(np.inf) * s) for s in (-1, 1)] + [centre])
    x = x[np.abs(x) <= COS32_MAX]
    edges = np.array(
        [0.0, 1e-45, 1.1754944e-38, np.pi / 4, np.pi / 2, np.pi, COS32_MAX, np.nextafter(COS32_MAX, np.float32(0))],
        dtype=np.float32,
    )
    # cos32v2 reduces by pi: its hardest arguments are near multiples of pi / 2 too (odd ones
    # are where the reduced argument sits at +-pi/2, the polynomial's edge)
    for values in (x, -x, edges, -edges):
        assert _error(values, name).max() <= COSINE_FUNCS[name][1]


def _v2_row(x, out, factor):
    cos32v2_into(x, x.size, out, 0, factor)


@pytest.mark.parametrize("row", [cos32_row, _v2_row], ids=["cos32", "cos32v2"])
def test_beyond_the_domain_the_row_kernel_falls_back_to_libm(row):
    x = np.array([1.0, 3.0e7, -1.0e30, 3.4e38, np.inf, -np.inf, np.nan, 2.0**24, 0.5], dtype=np.float32)
    out = np.empty_like(x)
    row(x, out, np.float32(2.0))
    with np.errstate(invalid="ignore"):
        exact = 2 * np.cos(x.astype(np.float64)).astype(np.float32)
    beyond = ~(np.abs(x) <= COS32_MAX)
    np.testing.assert_array_equal(out[beyond], exact[beyond])  # bitwise: libm, rounded
    assert np.all(np.abs(out[~beyond] - exact[~beyond]) <= 2 * COS32_ABS_ERROR + 1e-7)
    # the same values in a row without any out-of-domain value take the vectorized path
    inside = np.ascontiguousarray(x[~beyond])
    out2 = np.empty_like(inside)
    row(inside, out2, np.float32(2.0))
    np.testing.assert_array_equal(out2, out[~beyond])


def test_cos32v2_vector_lanes_equal_the_scalar_remainder_and_chunks_fall_back_alone():
    # 1000 values: vector body plus scalar remainder in each 256-value chunk; the same values
    # one at a time take only the scalar loop: bits must agree (explicit fmas, no contraction)
    x = (np.random.default_rng(3).standard_normal(1000) * 50).astype(np.float32)
    whole = cos32v2_array(x)
    single = np.array([cos32v2_array(x[i : i + 1])[0] for i in range(x.size)], dtype=np.float32)
    np.testing.assert_array_equal(whole, single)
    # one out-of-domain value sends only its own 256-value chunk to the scalar path: same bits
    y = x.copy()
    y[300] = 1e9
    got = cos32v2_array(y)
    np.testing.assert_array_equal(np.delete(got, 300), np.delete(whole, 300))
    assert got[300] == np.float32(np.cos(np.float64(np.float32(1e9))))


def test_fused_v2_kernels_round_the_argument_like_a_separate_pass():
    rng = np.random.default_rng(4)
    P = rng.standard_normal((5, 700)).astype(np.float32) * 20
    # beyond the domain and non-finite: only their group of 16 leaves the vector path (libm)
    P[0, 17], P[1, 3], P[2, 699], P[3, 40] = 1e6, np.inf, -3e5, np.nan
    scale = rng.uniform(0.5, 2, 5)
    phase = rng.uniform(0, 6.3, 700).astype(np.float32)
    factor = np.float32(0.3)
    arg = P * scale.astype(np.float32)[:, None] + phase  # numpy: product and sum rounded to float32
    expect = np.stack([cos32v2_array(a) * factor for a in arg])
    got = P.copy()
    shift_cos32v2_rows(got, scale, phase, factor)  # in place
    np.testing.assert_array_equal(got, expect)
    vec_scale = np.repeat(scale.astype(np.float32)[:, None], 700, 1)
    for i in range(5):
        out = np.empty(700, np.float32)
        affine_cos32v2(P[i], vec_scale[i], phase, out, factor)
        np.testing.assert_array_equal(out, expect[i])


@pytest.mark.parametrize("m", [1, 16, 63, 64, 65, 128, 200])
def test_fused_v2_steps_of_four_vectors_fall_back_alone_with_the_same_bits(m):
    # the whole-array kernel takes 64 values (four vectors) per step; an argument beyond the
    # domain or non-finite anywhere in a step sends that step to the one-vector path
    rng = np.random.default_rng(m)
    src = (rng.standard_normal(m) * 20).astype(np.float32)
    phase = rng.uniform(0, 6.3, m).astype(np.float32)
    f, factor = np.float32(1.7), np.float32(0.3)
    for bad in sorted({0, 15, 16, 47, 63, 64, 100, m - 1} & set(range(m))) + [None]:
        x = src.copy()
        if bad is not None:
            x[bad] = (np.nan, 1e7, -np.inf)[bad % 3]
        expect = cos32v2_array(x * f + phase) * factor  # numpy: product and sum rounded to float32
        out = np.full(m, 9.0, np.float32)
        shift_cos32v2(x, f, phase, out, factor)
        np.testing.assert_array_equal(out, expect, err_msg=f"bad argument at {bad}")
        shift_cos32v2(x, f, phase, x, factor)  # in place
        np.testing.assert_array_equal(x, expect)


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


def _cos32_features(fmap, X):
    """What float32 specs fitted by the previous version ("cosine": "cos32") produced."""
    factor = np.float32(np.sqrt(2.0 / fmap.n_components))
    if isinstance(fmap, Fastfood):
        arg = fmap.projection_block(X) + fmap._tables()[4]
        out = np.empty_like(arg)
        for i in range(len(arg)):
            cos32_row(np.ascontiguousarray(arg[i]), out[i], factor)
        return out
    W, phase = fmap._tables()
    P = projection(X, W, np.float32)
    if isinstance(fmap, RFF):
        affine_cos32_rows(P, np.ones(len(P)), phase, factor)
        return P
    return None  # NRFF: checked through the golden bytes of Fastfood and the bound below


@pytest.mark.parametrize("fmap", MAPS, ids=lambda m: type(m).__name__)
def test_new_fits_use_cos32v2_and_old_specs_keep_their_bytes(fmap):
    # The references compute the product as transform_block does (one call on all rows), so the
    # cosine path is compared bitwise; the public transform (row blocks, column panels, threads)
    # equals transform_block up to the rounding of the BLAS's product (tests/_blas_rounding.py).
    fmap = fmap.fit(X)
    spec = json.loads(fmap.spec_json())
    assert spec["state"]["cosine"] == "cos32v2"
    new = fmap.transform_block(X)
    assert_same_features(fmap, X, fmap.transform(X), new)
    # a spec written before cos32 has no "cosine" key: it must give exactly the old features
    old_spec = dict(spec, state={k: v for k, v in spec["state"].items() if k != "cosine"})
    old = from_spec(old_spec).transform_block(X)
    np.testing.assert_array_equal(old, _legacy_features(fmap, X))
    assert_same_features(fmap, X, from_spec(old_spec).transform(X), old)
    # a spec of the previous version says "cos32": it keeps cos32's bytes
    v1 = from_spec(dict(spec, state={"cosine": "cos32"})).transform_block(X)
    expect_v1 = _cos32_features(fmap, X)
    if expect_v1 is not None:
        np.testing.assert_array_equal(v1, expect_v1)
    # and the cosines agree to their bounds (times the output scale), plus rounding
    scale = np.abs(old).max() * 1.01
    assert np.abs(new - old).max() <= scale * (COS32V2_ABS_ERROR + 2e-7)
    assert np.abs(v1 - old).max() <= scale * (COS32_ABS_ERROR + 2e-7)
    assert not np.array_equal(new, old) and not np.array_equal(new, v1)  # the spec field matters
    np.testing.assert_array_equal(from_spec(spec).transform_block(X), new)


def test_fastfood_golden_bytes_of_both_cosines():
    # Fastfood uses no BLAS, so its bytes are the same on every machine: any change to either
    # cosine (or to the transform) changes these digests. cos32's were taken before cos32v2 existed.
    Xg = np.random.default_rng(0).normal(size=(300, 24)).astype(np.float32)
    Xg[5, 3] = 3000.0  # arguments beyond COS32_MAX: the libm fallback
    fmap = Fastfood(n_components=1000, gamma=0.05, seed=3).fit(Xg)
    digests = {}
    for cosine in ("cos32", "cos32v2"):
        Z = from_spec(dict(fmap.spec(), state={"cosine": cosine})).transform(Xg)
        digests[cosine] = hashlib.sha256(Z.tobytes()).hexdigest()[:16]
    assert digests == {"cos32": "2e89354d9852a8ec", "cos32v2": "03baef82aa727e72"}


def test_float64_specs_are_unchanged_and_bad_cosine_names_the_key():
    fmap = RFF(n_components=50, dtype="float64").fit(X)
    spec = fmap.spec()
    assert spec["state"] == {}  # byte-for-byte the spec of the previous version
    with pytest.raises(ValueError, match=r"spec\['state'\]\['cosine'\]"):
        from_spec(dict(spec, state={"cosine": "cos32"}))  # cos32 is float32 only
    with pytest.raises(ValueError, match=r"spec\['state'\]\['cosine'\]"):
        from_spec(dict(spec, state={"cosine": "cos32v2"}))
    spec32 = RFF(n_components=50).fit(X).spec()
    with pytest.raises(ValueError, match=r"spec\['state'\]\['cosine'\]"):
        from_spec(dict(spec32, state={"cosine": "fast"}))
