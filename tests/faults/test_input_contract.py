"""The input contract: every entry point refuses bad rows the same way, naming the global row.

Malformed CSR (SciPy accepts such matrices unchecked) read or wrote out of bounds in compiled
code before the contract, so those cases run in a subprocess: a segfault fails the test instead
of killing the test run. Valid input must give exactly the features it gave before.
"""

import itertools
import json
import os
import subprocess
import sys
import textwrap

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

import dask_kernels as dk
from dask_kernels import featurize, fit_incremental, registered_maps
from dask_kernels.pipeline.tasks import transform_rows

N, D, BAD_ROW, CHUNK = 40, 6, 13, 4
_STORES = itertools.count()


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) * (rng.random((N, D)) < 0.6)
    X[:, 0] = rng.standard_normal(N)  # every row has a nonzero to tamper with
    y = np.arange(N) % 2
    return X, y


def _small(cls, **kw):
    params = {"n_components": 16} if "n_components" in cls._get_param_names() else {}
    return cls(**params, **kw)


def _fitted(method, **kw):
    X, _ = _data()
    return _small(registered_maps()[method], **kw).fit(X)


def _sgd():
    return SGDClassifier(loss="log_loss", random_state=0)


# Every entry point a block of user rows goes through, as (name, call(X, fmap, y, tmp_path)).
def _entries():
    def transform(X, fmap, y, tmp):
        return fmap.transform(X)

    def lazy(X, fmap, y, tmp):
        return featurize(X, fmap, block_rows=CHUNK).compute(scheduler="synchronous")

    def store(X, fmap, y, tmp):
        with dask.config.set(scheduler="synchronous"):
            return featurize(X, fmap, block_rows=CHUNK, store=os.path.join(tmp, f"s{next(_STORES)}.zarr"),
                             progress=False)

    def incremental(X, fmap, y, tmp):
        return fit_incremental(_sgd(), X, y, feature_map=fmap, block_rows=CHUNK, epochs=1, validation_fraction=None,
                               progress=False)

    def predict(X, fmap, y, tmp):
        model = dk.KernelModel(fmap, _sgd().fit(fmap.expand(fmap.transform(_data()[0])), _data()[1]))
        return model.predict(X)

    return {"transform": transform, "featurize": lazy, "featurize-store": store, "fit_incremental": incremental,
            "predict": predict}


# -- malformed CSR, in a subprocess ----------------------------------------------------------------
def _malformed(kind):
    """A CSR matrix of the test rows, broken in row BAD_ROW the way ``kind`` says."""
    X = sp.csr_matrix(_data()[0])
    p = X.indptr[BAD_ROW]
    if kind == "negative-index":
        X.indices[p] = -1
    elif kind == "index-at-width":
        X.indices[p] = D
    elif kind == "index-far-out":
        X.indices[p] = 10**6
    elif kind == "indptr-decreasing":
        X.indptr[BAD_ROW] = X.indptr[BAD_ROW + 1] + 1
    elif kind == "indptr-overrun":
        X.indptr[BAD_ROW + 1:] += 10**6
    else:
        raise AssertionError(kind)
    return X


MALFORMED = ["negative-index", "index-at-width", "index-far-out", "indptr-decreasing", "indptr-overrun"]

_CHILD = textwrap.dedent(
    """
    import json, sys, tempfile
    sys.path.insert(0, {tests!r})
    import test_input_contract as t

    tmp = tempfile.mkdtemp()
    for method in sys.argv[1:]:
        for kind in t.MALFORMED:
            for name, call in t._entries().items():
                try:
                    call(t._malformed(kind), t._fitted(method), t._data()[1], tmp)
                    result = "accepted"
                except Exception as e:  # noqa: BLE001  (the parent asserts on it)
                    result = type(e).__name__ + ": " + str(e)
                print(json.dumps([method, kind, name, result]), flush=True)
    """
)


def test_malformed_csr_is_refused_naming_the_row_everywhere():
    # one child for every map (an interpreter start and imports per map cost more than the checks)
    code = _CHILD.format(tests=os.path.dirname(__file__))
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    methods = sorted(registered_maps())
    proc = subprocess.run([sys.executable, "-c", code, *methods], capture_output=True, text=True,
                          timeout=900, env=env)
    lines = [json.loads(s) for s in proc.stdout.splitlines() if s.startswith("[")]
    assert proc.returncode == 0, (f"child died with {proc.returncode} after {lines[-1:] or 'nothing'}:\n"
                                  f"{proc.stderr[-2000:]}")
    assert len(lines) == len(methods) * len(MALFORMED) * len(_entries())
    assert {m for m, *_ in lines} == set(methods)
    for method, kind, entry, result in lines:
        assert result.startswith("ValueError") and f"row {BAD_ROW}" in result, (method, kind, entry, result)
        assert "malformed CSR" in result, (method, kind, entry, result)


def test_malformed_csc_and_coo_are_refused_before_conversion():
    fmap = _fitted("gcws")
    X = sp.csc_matrix(_data()[0])
    X.indices[X.indptr[2]] = 10**6  # a row index far outside: CSC -> CSR would scatter there
    with pytest.raises(ValueError, match="row index 1000000 in column 2"):
        fmap.transform(X)
    C = sp.coo_matrix(_data()[0])
    C.row[5] = -7
    with pytest.raises(ValueError, match="row index -7"):
        fmap.validate_block(C)


def test_unsorted_and_duplicate_indices_are_valid_and_summed():
    """SciPy allows them (repeats add up): canonicalized in a copy, never refused or modified."""
    X, _ = _data()
    R = sp.csr_matrix(X)
    a, b = R.indptr[BAD_ROW], R.indptr[BAD_ROW + 1]
    U = R.copy()
    U.indices[a:b], U.data[a:b] = U.indices[a:b][::-1].copy(), U.data[a:b][::-1].copy()
    Dup = sp.csr_matrix((np.insert(R.data, b, 0.25), np.insert(R.indices, b, R.indices[a]),
                         np.r_[R.indptr[:BAD_ROW + 1], R.indptr[BAD_ROW + 1:] + 1]), shape=R.shape)
    Xdup = X.copy()
    Xdup[BAD_ROW, R.indices[a]] += 0.25
    before = (U.indices.copy(), Dup.indices.copy())
    for method in sorted(registered_maps()):
        fmap = _fitted(method)
        np.testing.assert_array_equal(fmap.transform(U), fmap.transform(R), err_msg=method)
        np.testing.assert_array_equal(fmap.transform(Dup), fmap.transform(sp.csr_matrix(Xdup)), err_msg=method)
    assert np.array_equal(U.indices, before[0]) and np.array_equal(Dup.indices, before[1])  # input untouched


# -- complex, object, width ------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["transform", "featurize", "featurize-store", "fit_incremental", "predict"])
@pytest.mark.parametrize("sparse", [False, True])
def test_complex_input_is_refused(entry, sparse, tmp_path):
    X, y = _data()
    Xc = X + 1j * np.where(X != 0, 0.5, 0.0)
    Xc = sp.csr_matrix(Xc) if sparse else Xc
    with pytest.raises(ValueError, match="[Cc]omplex"):
        _entries()[entry](Xc, _fitted("gcws"), y, str(tmp_path))


def test_object_and_string_input_is_refused_with_a_clear_message():
    fmap = _fitted("rff")
    with pytest.raises(ValueError, match="not numbers"):
        fmap.validate_block(np.array([["a"] * D] * 3, dtype=object))
    with pytest.raises(ValueError, match="dtype <U1: expected real numbers"):
        fmap.validate_block(np.array([["a"] * D] * 3))
    with pytest.raises(ValueError, match="2-D"):
        fmap.validate_block(np.ones(D))


def test_width_mismatch_names_the_rows():
    fmap = _fitted("gcws")
    for X in (np.ones((3, D + 1)), sp.csr_matrix(np.ones((3, D + 1)))):
        with pytest.raises(ValueError, match=rf"X has {D + 1} features, but the map is expecting {D} .*rows 40..42"):
            fmap.validate_block(X, row_offset=40)
        with pytest.raises(ValueError, match="rows 40..42"):
            transform_rows(fmap, X, 40)


# -- magnitude bounds ------------------------------------------------------------------------------
FOURIER = [
    ("rff", {}), ("rff", {"kernel": "laplacian"}), ("rff", {"dtype": "float64"}), ("nrff", {}),
    ("nrff", {"dtype": "float64"}), ("fastfood", {}), ("fastfood", {"dtype": "float64", "gamma": 1e-3}),
]


@pytest.mark.parametrize("method,kw", FOURIER)
@pytest.mark.parametrize("huge", [3.4e38, 1e308])
def test_huge_finite_values_are_refused_with_row_and_column(method, kw, huge, tmp_path):
    X, y = _data()
    fmap = _fitted(method, **kw)
    bad = X.astype(np.float32 if huge < 3.5e38 else np.float64)
    bad[BAD_ROW, 4] = -huge
    if fmap.max_abs_input >= huge:  # a float64 map handles float32's largest values
        assert np.all(np.isfinite(fmap.transform(bad)))
        return
    for name, call in _entries().items():
        with pytest.raises(ValueError, match=f"row {BAD_ROW}, column 4 exceeds the magnitude bound"):
            call(bad, fmap, y, str(tmp_path))
    with pytest.raises(ValueError, match=f"row {BAD_ROW}, column 4 exceeds"):
        fmap.transform(sp.csr_matrix(bad))


@pytest.mark.parametrize("method,kw", FOURIER)
def test_values_just_under_the_bound_give_finite_features(method, kw):
    fmap = _fitted(method, **kw)
    bound = fmap.max_abs_input
    signs = np.where(np.random.default_rng(1).random((8, D)) < 0.5, -1.0, 1.0)
    for dtype in (np.float32, np.float64):
        top = min(bound, float(np.finfo(dtype).max))
        X = (np.ones((8, D)) * np.nextafter(dtype(top), dtype(0))).astype(dtype)
        for rows in (X, X * signs.astype(dtype)):
            for block in (rows, sp.csr_matrix(rows)):
                Z = fmap.transform(block)
                assert np.all(np.isfinite(Z)), (method, kw, dtype)


def test_gcws_bound_applies_with_a_center_only():
    X, _ = _data()
    plain = _fitted("gcws", scale=None)
    assert plain.max_abs_input is None
    big = X.copy()
    big[BAD_ROW, 1] = 1.7e308
    assert plain.transform(big).shape == (N, 16)  # log|x| of any finite x is fine
    centered = _fitted("gcws", center="mean")
    with pytest.raises(ValueError, match=f"row {BAD_ROW}, column 1 exceeds"):
        centered.transform(big)
    # a mean of huge values must not overflow to a NaN/inf center
    mean = _small(dk.GCWS, center="mean").fit(np.full((4, D), 4e307))
    assert np.all(np.isfinite(mean.center_)) and np.allclose(mean.center_, 4e307)


# -- valid input: exactly the features the kernels give on the validated block -------------------
@pytest.mark.parametrize("method", sorted(registered_maps()))
def test_validation_does_not_change_valid_input(method):
    X, _ = _data()
    fmap = _fitted(method)
    for block in (X, X.astype(np.float32), sp.csr_matrix(X), sp.csr_matrix(X.astype(np.float32))):
        checked = fmap.validate_block(block)
        if sp.issparse(block):  # canonical CSR is passed through, no copy of the arrays
            assert np.shares_memory(checked.data, block.data) and np.shares_memory(checked.indices, block.indices)
        else:
            assert checked is block
        direct = fmap.transform_block(block)
        np.testing.assert_array_equal(fmap.transform(block), direct)
        lazy = featurize(block, fmap, block_rows=N).compute(scheduler="synchronous")
        np.testing.assert_array_equal(lazy, direct)
    # int and Fortran-ordered input become the float64 C block they always became
    np.testing.assert_array_equal(fmap.transform(np.asfortranarray(X)), fmap.transform_block(X))
    ints = np.round(X * 3)
    np.testing.assert_array_equal(fmap.transform(ints.astype(np.int64)), fmap.transform_block(ints))


def test_canonical_detection_matches_scipy_on_random_structures():
    """The flat check of sortedness (rows may restart lower) against SciPy's own scan."""
    from dask_kernels.blocks import _check_csr

    rng = np.random.default_rng(5)
    for trial in range(300):
        n, d = int(rng.integers(0, 7)), int(rng.integers(1, 6))
        lengths = rng.integers(0, 5, n) * (rng.random(n) < 0.7)
        rows = [np.sort(rng.choice(d, min(k, d), replace=False)) if rng.random() < 0.6 else rng.integers(0, d, k)
                for k in lengths]  # sorted and unique, or anything (unsorted, repeats)
        indptr = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int32)
        indices = np.concatenate(rows or [np.zeros(0)]).astype(np.int32)
        data = rng.standard_normal(indices.size)
        status, _, _, canonical = _check_csr(data, indices, indptr, d, np.finfo(np.float64).max)
        expected = sp.csr_matrix((data, indices, indptr), shape=(n, d)).has_canonical_format
        assert status == 0 and canonical == expected, (trial, indptr, indices)
        out = dk.blocks.validate_block(sp.csr_matrix((data, indices, indptr), shape=(n, d)))
        np.testing.assert_array_equal(out.toarray(), sp.csr_matrix((data, indices, indptr), shape=(n, d)).toarray())
        assert out.has_canonical_format


def test_errors_name_scattered_rows():
    X, _ = _data()
    X[7, 2] = np.nan
    rows = np.arange(N) * 10 + 1000
    for block in (X, sp.csr_matrix(X)):
        with pytest.raises(ValueError, match=r"\(nan\) in row 1070, column 2"):
            _fitted("rff").validate_block(block, row_numbers=rows)


def test_malformed_partition_is_refused_before_rows_are_picked():
    """fit_incremental picks held-out rows out of each partition: the partition is checked whole."""
    X, y = _data()

    class Parts:  # a partitioned source whose second partition (rows 20..39) is malformed
        row_counts, n_features, has_labels = (20, 20), D, True

        def loader(self, i):
            P = sp.csr_matrix(X[20 * i:20 * (i + 1)])
            if i == 1:
                P.indices[P.indptr[BAD_ROW]] = -1
            return P, y[20 * i:20 * (i + 1)], None

    with pytest.raises(ValueError, match=f"malformed CSR input: row {20 + BAD_ROW} has column index -1"):
        fit_incremental(_sgd(), Parts(), feature_map=_fitted("gcws"), epochs=1, validation_fraction=0.5, progress=False)


def test_training_on_raw_rows_names_the_bad_row():
    # without a feature map the rows went to scikit-learn unchecked: "Input X contains NaN", no row
    from sklearn.linear_model import SGDClassifier

    X = np.random.default_rng(0).standard_normal((500, 5))
    X[123, 2] = np.nan
    y = (np.arange(500) % 2).astype(np.int64)
    for window in (1, "auto"):  # one block at a time, and rows drawn across blocks
        with pytest.raises(ValueError, match=r"\(nan\) in row 123, column 2"):
            dk.fit_incremental(SGDClassifier(random_state=0), X, y, block_rows=100, epochs=1, shuffle_window=window)
