"""All pairs of rows at GMM similarity at least a threshold, on Dask, from GCWS codes.

How :func:`similarity_join` computes, in ``P`` passes over the band keys (pass of a key:
``(key >> 32) mod P``, :func:`pass_of`), ``P = ceil(25 bytes x n_rows x bands / pass_memory)``
(:func:`choose_passes`), each pass in three stages:

1. **Bands** (one task per block of codes): the ``bands`` keys of each row
   (:func:`~dask_kernels.similarity._kernels.band_keys`), its row key, side and row number, for
   the keys of this pass, cut into ``npartitions`` pieces by ``key mod npartitions``.
2. **Candidates** (one task per partition, gathering its piece of every block: an all-to-all of
   dask tasks over NumPy arrays, no DataFrame shuffle): each bucket is in one partition; the
   records are sorted by ``(key, rkey, side, row)`` and every bucket gives its pairs. A bucket
   larger than ``max_bucket + 1`` rows gives each member's pairs with the next ``max_bucket``
   members only: O(m * max_bucket) pairs instead of O(m**2). The row key sorts equal rows next
   to one another, so groups of up to ``max_bucket + 1`` equal rows keep all their pairs; two
   different rows of an oversized bucket become candidates through that band only when they
   fall within ``max_bucket`` places (a chance of about ``2 max_bucket / m``), and still through
   any other band they share. The pairs are cut by block of ``i``.
3. **Verification** (one task per block of ``source``, gathering its candidates from every
   partition, grouped by block of ``other`` inside the task, which reads one block of ``other``
   at a time): duplicates (one per shared band) are dropped; each pair is checked on all its
   codes, ``estimate = (matches / k - 2**-b) / (1 - 2**-b)`` (unbiased for GMM, standard error
   about ``sqrt(p (1 - p) / k) / (1 - 2**-b)``): kept when ``estimate >= threshold - margin``.
   With the raw rows, the margin is :func:`estimate_margin` (five standard errors: a pair at or
   above the threshold passes but for a chance of 3e-7) and the pairs that pass are kept on
   their exact GMM; without them, the margin is 0.

The band tasks of pass ``g + 1`` depend on a task that waits for the counts of pass ``g``'s
verified pairs, so the passes run one after another and what a pass leaves behind is its
verified pairs, not its records or candidates: the band records held at once are about
``pass_memory`` (at most twice that while a block's pieces are handed over), whatever the row
count. The cost: each pass reads every block of codes and computes every band key again
(``P`` times the band stage), and the passes do not overlap. The graph has ``P x (2 x blocks +
npartitions) + blocks`` tasks that compute, plus ``P x blocks x npartitions`` pieces handed
between them (the all-to-all; by default ``npartitions`` is the blocks over ``P``, so about
``blocks**2`` pieces in all, as in one pass): with ``npartitions`` fixed, linear in the blocks; no task
stands for a pair of blocks.

A pair sharing bands of several passes is verified in each of them; the pairs of a block of
``source`` are gathered from the passes with the duplicates dropped (:func:`_gather`), so each
is reported once. A bucket is all the records of one key, and a key is in one pass, so every
band gives the same candidates in any pass: the pairs of several passes are those of one.

Every stage depends only on the rows' codes and global row numbers, never on the blocks,
partitions or passes, so the pairs are the same whatever the partitioning.
"""

from __future__ import annotations

import logging
import operator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp

from ._kernels import agreement, band_keys, bucket_pairs, gmm_pairs, gmm_pairs_csr, row_keys
from ._source import _NpyAt, _NpyBlock, _StoreAt, as_codes, as_rows, check_code_range, load
from .banding import MIN_RECALL, WEIGHTS, check_bands, choose_bands, collision_probability

if TYPE_CHECKING:
    import dask.dataframe as dd

logger = logging.getLogger(__name__)

#: Default cap of :func:`similarity_join`'s bucket handling (``max_bucket``).
MAX_BUCKET = 64
#: Standard errors of :func:`estimate_margin`'s default.
Z_MARGIN = 5.0
#: Bytes of one band record: key, row key, row number (8 each) and side (1).
RECORD_BYTES = 25
#: Default of :func:`similarity_join`'s ``pass_memory``: bytes of band records per pass.
PASS_MEMORY = 256 * 2**20
#: Least ``pass_memory`` (1 MiB).
MIN_PASS_MEMORY = 2**20

def code_estimate(matches, n_hashes, bits):
    """Unbiased GMM estimate from the number of equal b-bit codes out of ``n_hashes``.

    Examples
    --------
    >>> from dask_kernels.similarity import code_estimate
    >>> float(code_estimate(160, 256, bits=1))   # 62.5 % agree, half of them by chance
    0.25
    """
    p = np.asarray(matches, dtype=np.float64) / n_hashes
    if bits is None:
        return p
    floor = 2.0 ** -int(bits)
    return (p - floor) / (1.0 - floor)


def estimate_margin(threshold, n_hashes, bits, z=Z_MARGIN):
    """``z`` standard errors of the code estimate of a pair at or above ``threshold``.

    The estimate's standard error is ``sqrt(p (1 - p) / k) / (1 - 2**-b)``, ``p`` the chance that
    one code agrees; over pairs at or above the threshold, ``p >= p(threshold)`` and
    ``p (1 - p)`` is largest at ``p = max(p(threshold), 1/2)``. A pair at or above the threshold
    has its estimate below ``threshold - margin`` with a chance under the normal tail at ``z``
    (3e-7 at ``z = 5``).

    Examples
    --------
    >>> from dask_kernels.similarity import estimate_margin
    >>> round(float(estimate_margin(0.8, 128, bits=8)), 3)   # 5 x 0.0353
    0.177
    """
    q = max(float(collision_probability(threshold, bits)), 0.5)
    floor = 0.0 if bits is None else 2.0 ** -int(bits)
    return z * np.sqrt(q * (1.0 - q) / n_hashes) / (1.0 - floor)


def _exact(rows_a, rows_b, ia, ib):
    """Exact GMM of the pairs ``(rows_a[ia[p]], rows_b[ib[p]])``: dense blocks or CSR blocks (or
    the readers of :class:`~dask_kernels.similarity._source.Rows` blocks)."""
    rows_a, rows_b = (r() if callable(r) else r for r in (rows_a, rows_b))
    if isinstance(rows_a, np.ndarray) != isinstance(rows_b, np.ndarray):  # dense X, sparse other_X or back
        rows_a, rows_b = (sp.csr_matrix(r) if isinstance(r, np.ndarray) else r for r in (rows_a, rows_b))
    if isinstance(rows_a, np.ndarray):
        return gmm_pairs(rows_a, rows_b, ia, ib)
    return gmm_pairs_csr(rows_a.data, rows_a.indices, rows_a.indptr, rows_b.data, rows_b.indices, rows_b.indptr,
                         ia, ib)


def pass_of(key, n_passes):
    """The pass of band keys (uint64): ``(key >> 32) % n_passes`` (high bits, independent of the
    bucket partition ``key % npartitions``; the keys are well-mixed hashes)."""
    return (np.asarray(key, np.uint64) >> np.uint64(32)) % np.uint64(n_passes)


def _block_keys(codes, start, side, bands, rows, n_parts, n_passes=1, g=0, after=None, bits=None):
    """Band records of a block in pass ``g`` of ``n_passes`` (the keys whose :func:`pass_of` is ``g``),
    cut by bucket: ``n_parts`` tuples ``(key, rkey, side, row)``, part ``key % n_parts``. ``after``
    (ignored) orders the pass after the previous one. Given ``bits``, codes of ``2**bits`` or more
    are refused."""
    codes = np.ascontiguousarray(load(codes))
    n = codes.shape[0]
    if bits is not None:
        check_code_range(codes, bits, f"{'other' if side else 'source'} rows {start}..{start + n - 1}")
    key = band_keys(codes, bands, rows).ravel()
    rkey = np.repeat(row_keys(codes), bands)
    row = np.repeat(np.arange(start, start + n, dtype=np.int64), bands)
    if n_passes > 1:
        mine = pass_of(key, n_passes) == np.uint64(g)
        key, rkey, row = key[mine], rkey[mine], row[mine]
    part = key % np.uint64(n_parts)
    order = np.argsort(part, kind="stable")
    cuts = np.searchsorted(part[order], np.arange(n_parts + 1, dtype=np.uint64))
    side = np.full(key.size, side, np.int8)
    return tuple(tuple(x[order[a:b]] for x in (key, rkey, side, row)) for a, b in zip(cuts[:-1], cuts[1:]))


def _partition_pairs(pieces, cap, cross, starts_a):
    """Candidate pairs of one bucket partition (its piece of every block), cut by block of ``i``:
    ``n_blocks_a`` arrays of shape (m, 2)."""
    key, rkey, side, row = (np.concatenate(x) for x in zip(*pieces))
    order = np.argsort(key)  # any order of equal keys: the lexsort below fixes it
    ks = key[order]
    shared = np.zeros(ks.size, bool)  # rows whose key is some other row's too: most are alone
    shared[1:] = ks[1:] == ks[:-1]
    shared[:-1] |= shared[1:]
    sel = order[shared]
    side, row = side[sel], row[sel]
    o = np.lexsort((row, side, rkey[sel], key[sel]))
    i, j = bucket_pairs(key[sel][o], side[o], row[o], cap, cross)
    _warn_cut(ks[shared], cap, i.size)
    return _cut(np.stack([i, j], axis=1), np.searchsorted(starts_a, i, side="right") - 1, len(starts_a) - 1)


def _warn_cut(keys, cap, kept):
    """Log the buckets of sorted ``keys`` that the cap cuts, when the pairs of their rows left
    uncompared are more than 1 % of the partition's (``kept`` compared): they are lost unless
    another band finds them, without a word otherwise (from the worker, where this runs)."""
    if keys.size <= cap + 1:
        return
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    m = np.diff(np.r_[starts, keys.size])
    m = m[m > cap + 1]
    skipped = int((m * (m - 1) // 2 - (m * cap - cap * (cap + 1) // 2)).sum())
    if skipped > 0.01 * (kept + skipped):
        logger.warning("similarity_join: max_bucket=%d cut %d bucket(s) of more than %d rows (the largest %d), "
                       "leaving %d pairs of their rows uncompared (%.0f %% of this partition's): those that no "
                       "other band finds are missed; raise max_bucket (similar --max-bucket) for recall", cap,
                       m.size, cap + 1, int(m.max()), skipped, 100.0 * skipped / (kept + skipped))


def _cut(pairs, part, n):
    """``pairs`` cut into ``n`` arrays by ``part`` (ints in ``[0, n)``)."""
    order = np.argsort(part, kind="stable")
    cuts = np.searchsorted(part[order], np.arange(n + 1))
    pairs = pairs[order]
    return tuple(pairs[a:b] for a, b in zip(cuts[:-1], cuts[1:]))


def _at(blocks, q):
    """Block q of one side for a verification task: from a reader of any block (of a store or a
    ``.npy`` file: one small object in the graph), or from the list of blocks the task received."""
    return blocks(q) if callable(blocks) else blocks[q]


def _side_blocks(codes):
    """What a verification task needs to read any block of ``codes``: a reader of the store, or
    the list of the dask array's chunks."""
    if codes.store is not None:
        return _StoreAt(*codes.store)
    return [codes.block(q) for q in range(codes.n_blocks)]


def _row_blocks(rows, codes):
    """As :func:`_side_blocks`, for raw rows: a reader of the ``.npy`` file, or the list of blocks."""
    blocks = [rows.block(q) for q in range(codes.n_blocks)]
    if all(isinstance(r, _NpyBlock) for r in blocks) and blocks:
        return _NpyAt(blocks[0].path, codes.starts, blocks[0].hashed, blocks[0].shape)
    return blocks


def _empty(exact):
    cols = {"i": np.empty(0, np.int64), "j": np.empty(0, np.int64), "estimate": np.empty(0)}
    if exact:
        cols["exact"] = np.empty(0)
    return pd.DataFrame(cols)


def _verify(pieces, block_a, b_blocks, rows_a, b_rows, start_a, starts_b, threshold, margin, bits):
    """The verified pairs of one block of ``source`` in one pass: its candidates from every
    partition, distinct, grouped by block of ``other`` (one block of ``other`` loaded at a time),
    checked on their codes (and raw rows)."""
    exact = rows_a is not None
    pairs = np.concatenate(pieces) if len(pieces) else np.empty((0, 2), np.int64)
    if not len(pairs):
        return _empty(exact)
    # sorted, distinct (a pair comes once per band it shares), as one int64 per pair: np.unique(axis=0)
    # sorts rows of two columns many times slower (25 of the 29 s of a join of 350,000 pairs)
    # (i counted from the block's first row: (rows of a block) x (rows of other) stays far inside int64)
    n_b = int(starts_b[-1])
    i, j = np.divmod(np.unique((pairs[:, 0] - start_a) * n_b + pairs[:, 1]), n_b)
    pairs = np.stack([i + start_a, j], axis=1)
    ca = load(block_a)
    if exact:
        xa = rows_a() if callable(rows_a) else rows_a
    qs = np.searchsorted(starts_b, pairs[:, 1], side="right") - 1
    by_q = np.argsort(qs, kind="stable")  # grouped by block of other, each group sorted by (i, j)
    pairs, qs = pairs[by_q], qs[by_q]
    cuts = np.flatnonzero(np.diff(qs)) + 1
    out = []
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(pairs)]):
        q = int(qs[lo])
        ia, ib = pairs[lo:hi, 0] - start_a, pairs[lo:hi, 1] - starts_b[q]
        cb = load(_at(b_blocks, q))
        est = code_estimate(agreement(ca, cb, ia, ib), ca.shape[1], bits)
        keep = est >= threshold - margin
        cols = {"i": ia[keep] + start_a, "j": ib[keep] + starts_b[q], "estimate": est[keep]}
        if exact:
            cols["exact"] = _exact(xa, _at(b_rows, q), ia[keep], ib[keep])
            cols = {k: v[cols["exact"] >= threshold] for k, v in cols.items()}
        out.append(pd.DataFrame(cols))
    return pd.concat(out, ignore_index=True).sort_values(["i", "j"], ignore_index=True)


def _count(df):
    return len(df)


def _identity(x):
    return x


def _barrier(counts):
    """Done when the pass before is verified (its candidates reduced to its pairs)."""
    return sum(counts)


def _gather(parts):
    """The pairs of one block of ``source``: its pass results, each pair once (a pair sharing bands
    of several passes is found in each: dropping it from all but one pass lost it when the bucket
    of that pass's band was oversized and cut it off), sorted by ``(i, j)``."""
    pairs = pd.concat(parts, ignore_index=True).drop_duplicates(["i", "j"])
    return pairs.sort_values(["i", "j"], ignore_index=True)


def choose_passes(n_records, pass_memory):
    """Passes of :func:`similarity_join` for ``n_records`` band records: enough that each pass
    holds about ``pass_memory`` bytes of them (:data:`RECORD_BYTES` each).

    Examples
    --------
    >>> from dask_kernels.similarity.join import choose_passes
    >>> choose_passes(10**6 * 25, 256 * 2**20)   # 10**6 rows, 25 bands: 625 MB of records
    3
    """
    return max(1, -(-int(n_records) * RECORD_BYTES // int(pass_memory)))


def check_pass_memory(pass_memory):
    """``pass_memory`` as an int of bytes, at least :data:`MIN_PASS_MEMORY`, or ValueError."""
    if isinstance(pass_memory, str):
        from dask.utils import parse_bytes

        try:
            pass_memory = parse_bytes(pass_memory)
        except ValueError:
            raise ValueError(f"pass_memory must be a size in bytes or like '256MiB', got {pass_memory!r}") from None
    if isinstance(pass_memory, bool) or not isinstance(pass_memory, (int, np.integer, float)) or \
            not np.isfinite(pass_memory) or pass_memory < MIN_PASS_MEMORY:
        raise ValueError(f"pass_memory must be at least {MIN_PASS_MEMORY} bytes (1 MiB), got {pass_memory!r}: "
                         "below it, passes cost more in per-task overhead than they save")
    return int(pass_memory)


def similarity_join(source: Any, threshold: float, other: Any = None, *, bits: int | None = None,
                    X: npt.ArrayLike | None = None, other_X: npt.ArrayLike | None = None, bands: int | None = None,
                    rows: int | None = None, weights: tuple[float, float] = WEIGHTS, min_recall: float = MIN_RECALL,
                    margin: float | None = None, max_bucket: int = MAX_BUCKET,
                    npartitions: int | None = None, pass_memory: int | str = PASS_MEMORY) -> dd.DataFrame:
    """All pairs of rows whose GMM similarity is at least ``threshold``, as a dask DataFrame.

    Parameters
    ----------
    source : str, FeatureStore, dask or NumPy array
        GCWS codes: a feature store (path or opened), or an array of codes (rows, hashes)
        with ``bits``.
    threshold : float in (0, 1)
    other : same kinds as ``source``, optional
        A second set of codes of the same map: pairs ``(i in source, j in other)`` instead of
        pairs within ``source``.
    bits : int, optional
        Code width, for arrays (a store knows its own).
    X, other_X : array-like, SciPy sparse matrix or path of a ``.npy`` file, optional
        The raw rows the codes were made from, (n_rows, n_features): pairs are then kept on
        their exact GMM (column ``exact``) instead of the code estimate. For a store's codes,
        the rows as featurize read them: they must have the map's width, and are centred or
        scaled as the map hashed them (:meth:`~dask_kernels.GCWS.hashed_rows`), so ``exact``
        is the similarity the codes estimate. For codes in arrays, give the rows the map
        hashed: ``gcws.hashed_rows(X)`` (``X`` itself for a map with ``scale=None`` and no
        center). A ``.npy`` path is read per block by the tasks that need it (the graph holds
        only the path); an in-memory matrix goes into the graph once. Rows holding NaN or
        infinity are refused (a ``.npy`` file's when its tasks read them), and with ``other`` the
        two sides must have the same columns.
    bands, rows : int, optional
        The LSH split (``bands * rows <= n_hashes``); by default :func:`choose_bands` of the
        threshold, the hash count, ``bits``, ``weights`` and ``min_recall``.
    weights : (float, float)
        False-positive and false-negative weights of :func:`choose_bands`.
    min_recall : float, default 0.999
        Least chance that a pair at the threshold becomes a candidate (:func:`choose_bands`).
    margin : float, optional
        How far below the threshold a pair's code estimate may fall and the pair still be kept
        (without raw rows) or checked on its exact GMM (with them). Default: 0 without raw rows
        (every reported pair has an estimate at least the threshold); with them,
        :func:`estimate_margin` (five standard errors of the estimate).
    max_bucket : int, default 64
        Rows paired with each member of an oversized bucket (see the module docstring). On rows
        mostly similar to one another, buckets are large and the cap loses pairs (12 % at 0.9 on
        mlbench's Vehicle; a warning is logged): raise it for recall, at the cost of time.
    npartitions : int, optional
        Bucket partitions of the band records of each pass (default: the blocks of codes over
        the passes, rounded up).
    pass_memory : int or str, default 256 MiB
        Bytes of band records a pass holds (``'256MiB'`` or an int; at least 1 MiB): the band
        keys are split into ``P = ceil(25 * n_rows * bands / pass_memory)`` passes by key, run
        one after another (see the module docstring).

    Returns
    -------
    dask.dataframe.DataFrame
        Columns ``i``, ``j`` (global row numbers; ``i < j`` in a self join), ``estimate`` (from the
        codes) and, with raw rows, ``exact``. One partition per block of ``source``, each sorted by
        ``(i, j)``; the pairs are the same for any partitioning of the input and any
        ``pass_memory``.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import GCWS
    >>> from dask_kernels.similarity import similarity_join
    >>> X = np.random.default_rng(0).random((200, 20))
    >>> X[150] = X[3]                                    # an exact duplicate
    >>> codes = GCWS(n_components=128, bits=8, seed=1, scale=None).fit_transform(X)  # the rows' own GMM
    >>> pairs = similarity_join(codes, 0.9, bits=8, X=X).compute()
    >>> pairs[["i", "j", "estimate", "exact"]].values.tolist()
    [[3.0, 150.0, 1.0, 1.0]]
    """
    import dask
    import dask.dataframe as dd

    threshold = float(threshold)
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    if margin is not None and not 0.0 <= float(margin) <= 1.0:
        raise ValueError(f"margin must be in [0, 1], got {margin!r}")
    if isinstance(max_bucket, bool) or int(max_bucket) != max_bucket or max_bucket < 1:
        raise ValueError(f"max_bucket must be a positive integer, got {max_bucket!r}")
    if npartitions is not None and (isinstance(npartitions, bool) or int(npartitions) != npartitions or
                                    npartitions < 1):  # (a negative count gave no pairs at all)
        raise ValueError(f"npartitions must be a positive integer or None, got {npartitions!r}")
    pass_memory = check_pass_memory(pass_memory)
    a = as_codes(source, bits, where="source")
    b = a if other is None else as_codes(other, bits if bits is not None else a.bits, where="other")
    cross = other is not None
    if cross and (b.n_hashes != a.n_hashes or b.bits != a.bits or
                  (a.spec is not None and b.spec is not None and a.spec != b.spec)):
        # (a map fitted on other rows differs: sampler="dart" and scale learn from them)
        raise ValueError("source and other hold codes of different maps (hashes, bits or spec differ): their codes "
                         "cannot be compared; featurize both with one fitted map (the first store's feature_map, "
                         "or featurize --spec with its spec saved as JSON)")
    if (X is None) != (other_X is None) if cross else other_X is not None:
        raise ValueError("give the raw rows of both sides (X and other_X), or of neither; other_X needs other")
    k = a.n_hashes
    if bands is None and rows is None:
        bands, rows = choose_bands(threshold, k, a.bits, weights, min_recall=min_recall)
    elif bands is None or rows is None:
        raise ValueError("give both bands and rows, or neither")
    bands, rows = check_bands(bands, rows, k)
    rows_a = None if X is None else as_rows(X, a, "X")
    rows_b = rows_a if not cross else (None if other_X is None else as_rows(other_X, b, "other_X"))
    if rows_a is not None and rows_a.width != rows_b.width:  # (the pair kernels would read past the narrower)
        raise ValueError(f"X has {rows_a.width} columns and other_X {rows_b.width}: give the raw rows of both "
                         "sides, of the same columns")
    if margin is None:
        margin = 0.0 if rows_a is None else estimate_margin(threshold, k, a.bits)

    sides = [a, b] if cross else [a]
    n_rows = sum(c.n_rows for c in sides)
    n_passes = choose_passes(n_rows * bands, pass_memory)
    # a pass holds 1/P of the records: 1/P of the partitions keep each partition's share (and the
    # pieces handed over, P x blocks x partitions, at blocks**2 as in one pass)
    n_parts = int(npartitions or -(-sum(c.n_blocks for c in sides) // n_passes))
    logger.info("similarity_join: %d rows x %d bands in %d pass(es) of %d bucket partitions", n_rows, bands,
                n_passes, n_parts)
    # The graph is written as one dict of tasks: chained delayed calls merge every argument's
    # whole graph (all earlier passes) into each call, time quadratic in the passes and cubic in
    # the blocks (10^6 rows, 50 blocks: 44 s against 15 s in one pass; minutes against 24 s in
    # three). A fresh name per call: keys never collide with another join's.
    import uuid

    from dask.delayed import Delayed
    from .._compat import HighLevelGraph

    name = f"dk-similarity-join-{uuid.uuid4().hex}"
    # The Delayed inputs (chunks of arrays, scattered rows), each behind one task of its own: a
    # key held by a Future (a persisted array) leaves the submitted graph, so a plain task could
    # not refer to it
    inputs, identity = {}, dask.delayed(_identity, pure=True)

    def ref(x):
        if isinstance(x, Delayed):
            if x.key not in inputs:
                inputs[x.key] = identity(x)
            return inputs[x.key].key
        return [ref(v) for v in x] if isinstance(x, list) else x

    starts_a, starts_b = (name + "-starts", 0), (name + "-starts", int(cross))  # one key when not cross
    dsk = {starts_a: np.asarray(a.starts), starts_b: np.asarray(b.starts)}
    b_blocks = ref(_side_blocks(b))
    b_rows = None if rows_b is None else ref(_row_blocks(rows_b, b))
    after = None
    results = [[] for _ in range(a.n_blocks)]
    for g in range(n_passes):
        blocks = []
        for side, c in enumerate(sides):
            for i in range(c.n_blocks):
                key = (name + "-bands", g, side, i)
                dsk[key] = (_block_keys, ref(c.block(i)), int(c.starts[i]), side, bands, rows, n_parts, n_passes,
                            g, after, c.bits)
                for t in range(n_parts):
                    dsk[(name + "-piece", g, side, i, t)] = (operator.getitem, key, t)
                blocks.append((side, i))
        for t in range(n_parts):
            key = (name + "-candidates", g, t)
            dsk[key] = (_partition_pairs, [(name + "-piece", g, side, i, t) for side, i in blocks],
                        int(max_bucket), cross, starts_a)
            for p in range(a.n_blocks):
                dsk[(name + "-cut", g, t, p)] = (operator.getitem, key, p)
        done = []
        for p in range(a.n_blocks):
            key = (name + "-verify", g, p)
            dsk[key] = (_verify, [(name + "-cut", g, t, p) for t in range(n_parts)], ref(a.block(p)), b_blocks,
                        None if rows_a is None else ref(rows_a.block(p)), b_rows, int(a.starts[p]), starts_b,
                        threshold, float(margin), a.bits)
            results[p].append(key)
            dsk[(name + "-count", g, p)] = (_count, key)
            done.append((name + "-count", g, p))
        after = (name + "-pass", g)
        dsk[after] = (_barrier, done)
    outputs = []
    for p, keys in enumerate(results):
        if n_passes > 1:
            dsk[(name + "-pairs", p)] = (_gather, keys)
            keys = [(name + "-pairs", p)]
        outputs.append(keys[0])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=list(inputs.values()))
    out = [Delayed(key, graph, layer=name) for key in outputs]
    meta = pd.DataFrame({"i": np.empty(0, np.int64), "j": np.empty(0, np.int64), "estimate": np.empty(0)})
    if rows_a is not None:
        meta["exact"] = np.empty(0)
    return dd.from_delayed(out, meta=meta, verify_meta=False)
