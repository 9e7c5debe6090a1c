"""How far two computations of the same BLAS-based features may differ: RFF, NRFF and Nystroem.

A BLAS (OpenBLAS, MKL) may sum a matrix product's terms in a different order when the rows of
a call, the columns, or its own thread count change: on some CPUs (OpenBLAS's Haswell kernels,
for one) a row's ``x . w`` then differs in its last bits between two partitionings. Any two
such sums of d terms lie within ``gamma_d sum_i |x_i w_i|`` of the exact one, ``gamma_d =
d u / (1 - d u)`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Sec.
3.1), so within twice that of each other; :func:`feature_rounding_bound` carries that
difference through the map's formula (the cosine and scalings are the package's own kernels,
which give the same bits for the same argument). GCWS, CoRE and Fastfood use no BLAS: their
features are compared bitwise (:func:`uses_blas` is False).
"""

import numpy as np
import scipy.sparse as sp

from dask_kernels import NRFF, RFF, Nystroem
from dask_kernels.exact.pairwise import kernel_block
from dask_kernels.maps._cos32 import COS32_ABS_ERROR, COS32V2_ABS_ERROR


def uses_blas(fmap, X):
    """Whether ``fmap``'s features of ``X`` go through a BLAS product (dense input of RFF or
    NRFF with a dense table, any input of Nystroem)."""
    if isinstance(fmap, Nystroem):
        return True
    if isinstance(fmap, (RFF, NRFF)):
        return not sp.issparse(X) and float(getattr(fmap, "density", 1.0)) >= 1.0
    return False


def _gamma(n, u):
    return n * u / (1.0 - n * u)


def feature_rounding_bound(fmap, X):
    """Elementwise bound ``(n, k)`` on ``|a - b|`` for two computations ``a``, ``b`` of
    ``fmap``'s features of the rows ``X`` whose BLAS products summed in different orders."""
    u = np.finfo(fmap.output_dtype_).eps / 2.0
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    d = X.shape[1]
    # error of one cosine: the package's float32 cosines (either), or libm's (about an ulp)
    cos_error = max(COS32_ABS_ERROR, COS32V2_ABS_ERROR) if u == np.finfo(np.float32).eps / 2 else 2.0 * u
    if isinstance(fmap, (RFF, NRFF)):
        W, phase = (np.asarray(t, dtype=np.float64) for t in fmap._tables())
        XW = X @ W
        P = np.abs(XW)
        dP = 2.0 * _gamma(d, u) * (np.abs(X) @ np.abs(W))  # two sums within gamma_d of the exact
        f = np.sqrt(2.0 / fmap.n_components)
        if isinstance(fmap, RFF):  # z = f cos(P + phase)
            return f * (dP + 2.0 * u * (P + np.abs(phase)) + 2.0 * cos_error) + 4.0 * u * f
        # NRFF: c = cos(P / |x| + phase), z = c / |c|
        norms = np.sqrt((X * X).sum(axis=1))[:, None]
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        dc = dP * inv + 2.0 * u * (P * inv + np.abs(phase)) + 2.0 * cos_error
        c = np.cos(XW * inv + phase)
        c_norm = np.linalg.norm(c, axis=1, keepdims=True)
        dc_norm = np.linalg.norm(dc, axis=1, keepdims=True)
        z = np.abs(c) / c_norm
        k = int(fmap.n_components)
        return (dc + np.abs(c) * dc_norm / c_norm) / c_norm + 2.0 * _gamma(k, u) * z + 4.0 * u * z
    if isinstance(fmap, Nystroem):  # z = K(x, landmarks) @ N
        L, extra, N = fmap._tables()
        K = np.asarray(kernel_block(fmap.kernel, X, L, gamma=fmap.gamma_, dtype=np.float64, **extra))
        N = np.abs(np.asarray(N, dtype=np.float64))
        m = N.shape[0]
        dK = np.zeros_like(K)
        if fmap.kernel == "rbf":  # K = exp(-gamma (|x|^2 + |l|^2 - 2 x . l)): x . l from the BLAS
            Ld = np.asarray(L.toarray() if sp.issparse(L) else L, dtype=np.float64)
            sq = (X * X).sum(axis=1)[:, None] + (Ld * Ld).sum(axis=1)[None, :]
            dK = np.abs(K) * fmap.gamma_ * (4.0 * _gamma(d, u) * (np.abs(X) @ np.abs(Ld).T) + 8.0 * u * sq) \
                + 4.0 * u * np.abs(K)
        return 2.0 * _gamma(m, u) * (np.abs(K) @ N) + dK @ N + 4.0 * u * np.abs(K @ N)
    raise TypeError(f"{type(fmap).__name__} uses no BLAS: compare its features bitwise")


def assert_same_features(fmap, X, got, expected):
    """``got == expected`` bitwise for maps without BLAS; within :func:`feature_rounding_bound`
    (and not a bit beyond) for BLAS-based ones."""
    got = got.toarray() if sp.issparse(got) else np.asarray(got)
    expected = expected.toarray() if sp.issparse(expected) else np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if not uses_blas(fmap, X):
        np.testing.assert_array_equal(got, expected)
        return
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    bound = feature_rounding_bound(fmap, X)
    worst = np.unravel_index(np.argmax(diff - bound), diff.shape)
    assert (diff <= bound).all(), (f"row {worst[0]}, feature {worst[1]}: {got[worst]!r} and {expected[worst]!r} "
                                   f"differ by {diff[worst]:.3g}, beyond the BLAS rounding bound {bound[worst]:.3g}")
