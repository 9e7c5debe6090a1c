"""The band/row split of LSH on b-bit codes, and its S-curve.

Two rows whose GMM similarity is ``s`` agree on one b-bit code with probability
``p(s) = s + (1 - s) 2**-b`` (the sample collides with probability ``s``; otherwise the lowest
``b`` bits of two different samples still agree one time in ``2**b``). With ``k >= B * R`` codes
cut into ``B`` bands of ``R`` codes, a pair becomes a candidate when all ``R`` codes of at least
one band agree:

    P(s) = 1 - (1 - p(s)**R)**B

:func:`choose_bands` picks ``(B, R)`` for a threshold ``t`` as datasketch does: the split that
minimizes ``w_fp * integral_0^t P(s) ds + w_fn * integral_t^1 (1 - P(s)) ds``, among the splits
whose candidate probability at the threshold, ``P(t)``, is at least ``min_recall``. Every candidate
is verified afterwards, so a false positive costs one comparison while a false negative is lost.
The integrals alone do not bound the loss at the threshold: the area ``integral_t^1 (1 - P)`` is
small whenever ``P`` rises steeply just above ``t``, while pairs at ``t`` itself are still missed
(at ``t = 0.8``, 128 codes of 8 bits, the weights alone pick 18 bands of 7 codes: ``P(0.8) =
0.986``). ``P`` increases with ``s``, so ``P(t) >= min_recall`` bounds the loss of every pair at or
above the threshold.
"""

from __future__ import annotations

import numpy as np

#: Default (false-positive, false-negative) weights of :func:`choose_bands`.
WEIGHTS = (0.01, 0.99)
#: Default least candidate probability at the threshold (:func:`choose_bands`' ``min_recall``).
MIN_RECALL = 0.999
#: Points of the trapezoid rule over each integral.
_GRID = 513


def collision_probability(s, bits=None):
    """Probability that two rows of GMM similarity ``s`` agree on one code of ``bits`` bits
    (``bits=None``: full samples, ``p = s``).

    Examples
    --------
    >>> from dask_kernels.similarity import collision_probability
    >>> float(collision_probability(0.5, bits=1))
    0.75
    """
    s = np.asarray(s, dtype=np.float64)
    return s if bits is None else s + (1.0 - s) * 2.0 ** -int(bits)


def candidate_probability(s, bands, rows, bits=None):
    """``P(s) = 1 - (1 - p(s)**rows)**bands``: the chance that a pair of similarity ``s`` shares a band.

    Examples
    --------
    >>> from dask_kernels.similarity import candidate_probability
    >>> round(float(candidate_probability(0.8, bands=32, rows=8, bits=8)), 4)
    0.9973
    """
    p = collision_probability(s, bits)
    return 1.0 - (1.0 - p ** np.asarray(rows, np.int64)) ** np.asarray(bands, np.int64)


def _errors(t, n_hashes, bits, max_rows):
    """``(bands, rows, false-positive area, false-negative area)`` of every split with
    ``bands * rows <= n_hashes`` (the most bands that fit each row count)."""
    lo = np.linspace(0.0, t, _GRID)
    hi = np.linspace(t, 1.0, _GRID)
    r = np.arange(1, min(n_hashes, max_rows) + 1)
    b = n_hashes // r
    fp = np.trapezoid(1.0 - (1.0 - collision_probability(lo, bits)[None, :] ** r[:, None]) ** b[:, None], lo, axis=1)
    fn = np.trapezoid((1.0 - collision_probability(hi, bits)[None, :] ** r[:, None]) ** b[:, None], hi, axis=1)
    return b, r, fp, fn


def choose_bands(threshold, n_hashes, bits=None, weights=WEIGHTS, max_rows=64, min_recall=MIN_RECALL):
    """``(bands, rows)`` for an LSH join at GMM similarity ``threshold`` on ``n_hashes`` codes.

    Minimizes ``w_fp * FP + w_fn * FN`` (the areas under the S-curve below the threshold and
    above it under one minus the S-curve) over ``bands * rows <= n_hashes``, as datasketch's
    ``MinHashLSH`` does, among the splits that make a pair at the threshold a candidate with
    probability at least ``min_recall`` (when none does, the split of the highest such probability);
    ``bits`` accounts for the extra agreements of b-bit codes. Only the largest band count of each
    row count is considered: more bands never hurt recall, and every candidate is verified.

    Parameters
    ----------
    threshold : float in (0, 1)
    n_hashes : int
        Codes per row (the map's ``n_components``).
    bits : int, optional
        Code width; None for full samples.
    weights : (float, float), default (0.01, 0.99)
        False-positive and false-negative weights (summing to 1).
    max_rows : int, default 64
        Largest band width considered.
    min_recall : float in [0, 1], default 0.999
        Least ``P(threshold)``, the chance that a pair exactly at the threshold becomes a
        candidate (0: the weighted areas alone).

    Examples
    --------
    >>> from dask_kernels.similarity import choose_bands
    >>> choose_bands(0.8, 128, bits=8)
    (25, 5)
    >>> choose_bands(0.8, 128, bits=8, min_recall=0)   # the areas alone: P(0.8) = 0.986
    (18, 7)
    """
    t = float(threshold)
    if not 0.0 < t < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    if isinstance(n_hashes, bool) or int(n_hashes) != n_hashes or n_hashes < 1:
        raise ValueError(f"n_hashes must be a positive integer, got {n_hashes!r}")
    w_fp, w_fn = (float(w) for w in weights)
    if not (w_fp >= 0 and w_fn >= 0 and abs(w_fp + w_fn - 1.0) < 1e-9):
        raise ValueError(f"weights must be two nonnegative numbers summing to 1, got {weights!r}")
    if not 0.0 <= float(min_recall) <= 1.0:
        raise ValueError(f"min_recall must be in [0, 1], got {min_recall!r}")
    b, r, fp, fn = _errors(t, int(n_hashes), bits, int(max_rows))
    at_t = candidate_probability(t, b, r, bits)
    cost = w_fp * fp + w_fn * fn
    ok = at_t >= float(min_recall)
    best = int(np.argmin(np.where(ok, cost, np.inf))) if ok.any() else int(np.argmax(at_t))
    return int(b[best]), int(r[best])


def check_bands(bands, rows, n_hashes):
    """``(bands, rows)`` as ints, or ValueError when they do not fit ``n_hashes`` codes."""
    for name, v in (("bands", bands), ("rows", rows)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if bands * rows > n_hashes:
        raise ValueError(f"bands * rows = {bands} * {rows} = {bands * rows} codes, but the rows have only "
                         f"{n_hashes} codes: lower bands or rows")
    return int(bands), int(rows)
