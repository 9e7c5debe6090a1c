"""Similarity search on GCWS codes: banding, the join against brute force, partition invariance,
A x B against the self join of A u B, oversized buckets, the index and its saved format."""

import json
import os

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from sklearn.datasets import load_digits, load_iris

import dask_kernels.maps.base  # noqa: F401  (import order of the package's lazy names)
from dask_kernels import GCWS, featurize, gmm_kernel, open_store
from dask_kernels.similarity import (SimilarityIndex, candidate_probability, choose_bands, code_estimate,
                                     collision_probability, similarity_join)

T = 0.8


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def _pairs(df):
    return set(zip(df["i"].tolist(), df["j"].tolist()))


def _truth(X, threshold):
    K = gmm_kernel(X)
    i, j = np.nonzero(np.triu(K >= threshold, 1))
    return set(zip(i.tolist(), j.tolist())), K


def _weighted_rows(seed=0, groups=60, d=40):
    """Base rows of exponential weights (a third of them zero) and partners at set GMM
    similarities: GMM(x, s x) = s exactly, and GMM(s1 x, s2 x) = s1 / s2."""
    rng = np.random.default_rng(seed)
    levels = [0.6, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
    rows = []
    for _ in range(groups):
        x = rng.exponential(size=d) * (rng.random(d) > 1 / 3)
        rows += [s * x for s in levels]
    return np.array(rows)


def test_collision_and_candidate_probability():
    assert collision_probability(0.3, bits=2) == pytest.approx(0.3 + 0.7 / 4)
    assert collision_probability(0.3) == pytest.approx(0.3)
    assert candidate_probability(0.8, 4, 5, bits=None) == pytest.approx(1 - (1 - 0.8**5) ** 4)


def test_choose_bands_minimizes_the_weighted_error_areas():
    t, k, bits, (wfp, wfn) = 0.7, 24, 4, (0.3, 0.7)

    def cost(b, r):
        fp = quad(lambda s: candidate_probability(s, b, r, bits), 0, t)[0]
        fn = quad(lambda s: 1 - candidate_probability(s, b, r, bits), t, 1)[0]
        return wfp * fp + wfn * fn

    splits = [(k // r, r) for r in range(1, k + 1)]
    assert choose_bands(t, k, bits, (wfp, wfn), min_recall=0) == min(splits, key=lambda br: cost(*br))
    # min_recall: the cheapest of the splits that make a pair at the threshold a candidate that often
    for floor in (0.99, 0.999):
        ok = [br for br in splits if candidate_probability(t, *br, bits) >= floor]
        assert choose_bands(t, k, bits, (wfp, wfn), min_recall=floor) == min(ok, key=lambda br: cost(*br))
    with pytest.raises(ValueError, match="threshold"):
        choose_bands(1.0, k)
    with pytest.raises(ValueError, match="min_recall"):
        choose_bands(t, k, min_recall=1.5)


def test_default_bands_find_pairs_at_the_threshold_at_least_as_often_as_five_minhash_tables():
    """At t = 0.8, 128 codes of 8 bits, the weighted areas alone pick 18 bands of 7 codes, which
    miss a pair exactly at the threshold 1.4 % of the time (Spark's 5 MinHash tables: 0.03 %)."""
    spark = 1 - (1 - T) ** 5
    for k in (64, 128, 256, 512):
        assert candidate_probability(T, *choose_bands(T, k, 8), bits=8) >= spark
    assert 1 - candidate_probability(T, *choose_bands(T, 128, 8, min_recall=0), bits=8) > 0.01


def test_join_with_raw_rows_misses_no_pair_at_the_threshold():
    """Pairs at GMM 0.8 (x and 0.8 x, 0.6 x and 0.75 x: those rounding to >= 0.8) and above: with
    the default bands a pair at the threshold is missed with chance 1 - P(0.8) = 4.6e-5
    (candidates) plus under 3e-7 (the margin of the estimate), so at most 1 miss among these
    ~5,000 pairs (expected 0.02); the areas' split (18 bands of 7 codes, chance 0.014 at 0.8)
    misses about 6 of the ~400 pairs at 0.8 alone."""
    X = _weighted_rows(seed=2, groups=400)
    truth, K = _truth(X, T)
    at_t = sum(1 for i, j in truth if abs(K[i, j] - T) < 1e-9)
    assert at_t >= 380 and len(truth) >= 5000
    codes = GCWS(scale=None, n_components=128, bits=8, seed=4, sampler="dart").fit(X).transform(X)
    got = _pairs(similarity_join(da.from_array(codes, chunks=(400, -1)), T, bits=8, X=X).compute())
    assert got <= truth
    assert len(truth - got) <= 1


def test_sparse_raw_rows_give_the_pairs_of_dense_ones():
    import scipy.sparse as sp

    X = _weighted_rows(seed=3, groups=40)  # a third of the entries are zero
    codes = GCWS(scale=None, n_components=128, bits=8, seed=1, sampler="dart").fit(X).transform(X)
    dense = similarity_join(da.from_array(codes, chunks=(70, -1)), T, bits=8, X=X).compute()
    csr = sp.csr_matrix(X)
    rev = np.concatenate([np.arange(e - 1, s - 1, -1) for s, e in zip(csr.indptr[:-1], csr.indptr[1:])])
    Xs = sp.csr_matrix((csr.data[rev], csr.indices[rev], csr.indptr), shape=X.shape)  # each row's columns reversed
    assert not Xs.has_sorted_indices  # the pair kernel merges sorted column indices: they get sorted
    sparse = similarity_join(da.from_array(codes, chunks=(70, -1)), T, bits=8, X=Xs).compute()
    assert len(dense) > 100
    pd.testing.assert_frame_equal(sparse.reset_index(drop=True), dense.reset_index(drop=True), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="X: expected 280 rows"):
        similarity_join(codes, T, bits=8, X=Xs[:10])


def test_code_agreement_is_gmm_plus_chance_agreement_of_b_bits():
    """Exact for DartMinHash codes (a hash of the winning dart). ICWS's codes are the lowest b bits
    of the split index i* (2 x feature, + 1 for a negative value) alone: i* agrees a little more
    often than (i*, t*) (0-bit CWS), and on nonnegative rows the lowest bit is always 0, so
    different i* agree on b bits one time in 2**(b - 1), not 2**b."""
    X = _weighted_rows(seed=1, groups=40)
    codes = GCWS(scale=None, n_components=256, bits=2, seed=3, sampler="dart").fit_transform(X)
    a, b = np.arange(6, len(X), 7), np.arange(3, len(X), 7)  # pairs (x, 0.85 x): GMM 0.85 exactly
    p = (codes[a] == codes[b]).mean()
    expect = collision_probability(0.85, bits=2)
    assert abs(p - expect) < 4 * np.sqrt(expect * (1 - expect) / (a.size * 256))
    assert code_estimate(p * 256, 256, 2) == pytest.approx(0.85, abs=4 * np.sqrt(0.15 * 0.85 / (a.size * 256)) / 0.75)
    g = GCWS(scale=None, n_components=256, bits=2, seed=3).fit(X)
    icws = g.transform(X)
    assert (icws[a] == icws[b]).mean() > p
    assert not (icws & 1).any()  # nonnegative rows: every split index, so every code, is even
    i_star = g.sample(X)[0]
    same = (i_star[a] == i_star[b]).mean()
    expect = same + (1 - same) / 2  # one of the two bits is wasted
    assert abs((icws[a] == icws[b]).mean() - expect) < 4 * np.sqrt(expect * (1 - expect) / (a.size * 256))


def test_a_store_of_icws_codes_warns_that_estimates_lean_high(tmp_path):
    X = _weighted_rows(groups=10)
    for sampler in ("icws", "dart"):
        featurize(X, GCWS(n_components=32, bits=8, seed=1, sampler=sampler), store=str(tmp_path / sampler),
                  progress=False)
    with pytest.warns(UserWarning, match="sampler='dart'"):
        similarity_join(str(tmp_path / "icws"), T)
    with pytest.warns(UserWarning, match="lean high"):
        SimilarityIndex.from_source(str(tmp_path / "icws"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        similarity_join(str(tmp_path / "dart"), T)


@pytest.mark.parametrize("exact", [True, False])
def test_join_recall_and_precision_on_weighted_rows_at_set_similarities(exact):
    X = _weighted_rows()
    truth, K = _truth(X, T)
    codes = GCWS(scale=None, n_components=512, bits=8, seed=5, sampler="dart").fit(X).transform(X)
    df = similarity_join(codes, T, bits=8, X=X if exact else None).compute()
    got = _pairs(df)
    # On the code estimate a pair exactly at the threshold is kept half the time (estimate noise):
    # recall is asserted from T + 0.05 up, 2.6 standard errors at k = 512, and from T with exact GMM.
    wanted = truth if exact else {(i, j) for i, j in truth if K[i, j] >= T + 0.05}
    assert len(got & wanted) >= 0.95 * len(wanted)
    sims = K[df["i"], df["j"]]
    assert sims.min() >= (T if exact else T - 0.05) - 1e-12  # code estimate: 0.05 = 2.6 standard errors at k = 512
    if exact:
        assert np.allclose(df["exact"], sims)
    assert (df["i"] < df["j"]).all() and not df.duplicated(["i", "j"]).any()


def _real_rows():
    """Iris (one exact duplicate, rows 101 and 142, and many naturally close rows) and digits
    with near duplicates: 150 digit images with one or two pixels changed by one grey level."""
    iris = np.pad(load_iris().data, ((0, 0), (0, 60)))  # zero columns: the same GMM, digits' width
    digits = load_digits().data[:400]
    rng = np.random.default_rng(0)
    near = digits[rng.choice(len(digits), 150, replace=False)].copy()
    for row in near:
        cols = rng.choice(np.flatnonzero(row), rng.integers(1, 3), replace=False)
        row[cols] += rng.choice([-1.0, 1.0], cols.size)
    return np.vstack([iris, digits, near]), len(iris)


def test_join_finds_the_real_exact_and_near_duplicates():
    X, n_iris = _real_rows()
    truth, K = _truth(X, 0.9)
    assert (101, 142) in truth and K[101, 142] == 1.0  # iris's own exact duplicate
    assert sum(1 for i, j in truth if i >= n_iris) >= 150  # the digits' near duplicates
    # DartMinHash: ICWS's codes are bits of i*, and iris's rows have 4 nonzero features: 4 codes
    codes = GCWS(scale=None, n_components=256, bits=8, seed=2, sampler="dart").fit(X).transform(X)
    df = similarity_join(codes, 0.9, bits=8, X=X).compute()
    got = _pairs(df)
    assert (101, 142) in got
    assert len(got & truth) >= 0.95 * len(truth) and got <= truth


def test_results_do_not_depend_on_the_partitioning(tmp_path):
    X = _weighted_rows(groups=30)
    gcws = GCWS(scale=None, n_components=128, bits=4, seed=7, sampler="dart").fit(X)
    codes = gcws.transform(X)
    runs = [similarity_join(da.from_array(codes, chunks=(c, -1)), T, bits=4, npartitions=p).compute()
            for c, p in ((len(X), 1), (37, 5), (100, 2))]
    featurize(X, gcws, store=str(tmp_path / "s.zarr"), block_rows=53, progress=False)
    runs.append(similarity_join(str(tmp_path / "s.zarr"), T, npartitions=3).compute())
    canon = [r.sort_values(["i", "j"]).reset_index(drop=True) for r in runs]
    assert len(canon[0]) > 50
    for r in canon[1:]:
        pd.testing.assert_frame_equal(r, canon[0])


def test_cross_join_is_the_filtered_self_join_of_the_union():
    X = _weighted_rows(groups=30, seed=4)
    codes = GCWS(scale=None, n_components=128, bits=8, seed=9).fit_transform(X)
    perm = np.random.default_rng(1).permutation(len(X))
    A, B = codes[perm[:120]], codes[perm[120:]]
    cross = similarity_join(da.from_array(A, chunks=(50, -1)), T, da.from_array(B, chunks=(40, -1)), bits=8,
                            max_bucket=8).compute()
    union = similarity_join(np.vstack([A, B]), T, bits=8, max_bucket=8).compute()
    union = union[(union["i"] < 120) & (union["j"] >= 120)].assign(j=lambda d: d["j"] - 120)
    key = ["i", "j"]
    assert len(cross) > 20
    pd.testing.assert_frame_equal(cross.sort_values(key).reset_index(drop=True),
                                  union.sort_values(key).reset_index(drop=True))


def test_an_oversized_bucket_gives_linear_not_quadratic_candidates():
    rng = np.random.default_rng(0)
    X = rng.random((400, 10))
    X[100:400] = X[0]  # 301 equal rows: one bucket of 301 in every band
    codes = GCWS(scale=None, n_components=64, bits=8, seed=1).fit_transform(X)
    full = similarity_join(codes, 0.9, bits=8, max_bucket=1000).compute()
    capped = similarity_join(codes, 0.9, bits=8, max_bucket=5).compute()
    assert len(full) == 301 * 300 // 2
    assert len(capped) <= 301 * 5 and _pairs(capped) <= _pairs(full)
    dup = {0, *range(100, 400)}  # each equal row is still paired, with its neighbours in the bucket
    assert {i for p in _pairs(capped) for i in p} == dup


def test_bad_arguments_are_named():
    codes = np.zeros((5, 8), np.uint8)
    with pytest.raises(ValueError, match="bits="):
        similarity_join(codes, 0.5)
    with pytest.raises(ValueError, match="bands \\* rows"):
        similarity_join(codes, 0.5, bits=8, bands=4, rows=3)
    with pytest.raises(ValueError, match="different maps"):
        similarity_join(codes, 0.5, np.zeros((5, 16), np.uint8), bits=8)
    with pytest.raises(ValueError, match="rows"):
        similarity_join(codes, 0.5, bits=8, X=np.zeros((4, 3)))


def test_a_store_of_another_map_is_refused(tmp_path):
    from dask_kernels import RFF

    X = np.random.default_rng(0).random((20, 4))
    featurize(X, RFF(n_components=8), store=str(tmp_path / "r.zarr"), progress=False)
    with pytest.raises(ValueError, match="GCWS"):
        similarity_join(str(tmp_path / "r.zarr"), 0.5)


def test_index_queries_match_brute_force_and_round_trip(tmp_path):
    X = _weighted_rows(groups=40)
    codes = GCWS(scale=None, n_components=256, bits=8, seed=5).fit_transform(X)
    index = SimilarityIndex(codes, bits=8)
    q = codes[::5]
    est = code_estimate((q[:, None, :] == codes[None, :, :]).sum(2), 256, 8)
    truth = set(zip(*np.nonzero(est >= T)))
    got = index.query(q, T)
    assert len(set(zip(got["query"], got["row"])) & truth) >= 0.95 * len(truth)
    assert (got["estimate"] >= T).all()
    top = index.top_k(q, 3)
    best = np.sort(est, axis=1)[:, ::-1][:, :3]  # the three highest estimates of each query
    assert np.allclose(top["estimate"].to_numpy().reshape(-1, 3), best)
    loaded = SimilarityIndex.load(index.save(tmp_path / "idx"))
    assert np.array_equal(loaded.codes, codes) and loaded.bits == 8
    pd.testing.assert_frame_equal(loaded.query(q, T), got)


def test_a_damaged_or_foreign_index_is_refused(tmp_path):
    codes = GCWS(scale=None, n_components=16, bits=8, seed=0).fit_transform(np.random.default_rng(0).random((30, 5)))
    path = SimilarityIndex(codes, 8).save(tmp_path / "idx")
    meta = json.load(open(os.path.join(path, "index.json")))
    np.savez(os.path.join(path, "codes.npz"), codes=codes[::-1].copy())  # other bytes, same shape
    with pytest.raises(ValueError, match="sha256"):
        SimilarityIndex.load(path)
    json.dump(dict(meta, n_rows=10**12), open(os.path.join(path, "index.json"), "w"))
    with pytest.raises(ValueError, match="shape|limit"):
        SimilarityIndex.load(path)
    json.dump(dict(meta, format="dk-similarity-index-0"), open(os.path.join(path, "index.json"), "w"))
    with pytest.raises(ValueError, match="format"):
        SimilarityIndex.load(path)
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match="refusing"):
        SimilarityIndex(codes, 8).save(other)
    assert (other / "notes.txt").read_text() == "keep"


def test_a_damaged_store_block_is_named_not_searched(tmp_path):
    import shutil

    from dask_kernels.pipeline import StoreIntegrityError

    X = _weighted_rows(groups=10)
    path = str(tmp_path / "s.zarr")
    featurize(X, GCWS(scale=None, n_components=32, bits=8, seed=1, sampler="dart"), store=path, block_rows=20,
              progress=False)
    chunk = os.path.join(path, "features", "c", "{}", "0")
    shutil.copyfile(chunk.format(1), chunk.format(0))  # a swapped chunk: valid bytes, wrong rows
    with pytest.raises(StoreIntegrityError, match="block 0"):
        similarity_join(path, T).compute()


def test_the_graph_does_not_grow_with_the_row_count(tmp_path):
    """Codes from a store and raw rows from a .npy file: each task reads its own blocks, so the
    graph of a join of 10x the rows (same number of blocks) is no larger."""
    import pickle

    sizes, found = [], []
    for n in (400, 4000):
        X = _weighted_rows(groups=n // 4)[:n]
        np.save(tmp_path / f"X{n}.npy", X)
        gcws = GCWS(scale=None, n_components=64, bits=8, seed=3, sampler="dart").fit(X)
        featurize(X, gcws, store=str(tmp_path / f"s{n}.zarr"), block_rows=n // 4, progress=False)
        df = similarity_join(str(tmp_path / f"s{n}.zarr"), T, X=str(tmp_path / f"X{n}.npy"))
        sizes.append(len(pickle.dumps(dict(df.__dask_graph__()))))
        found.append(df.compute())
    assert sizes[1] <= sizes[0] * 1.02 + 200, sizes  # the paths' lengths differ by a digit
    for X_n, df in zip((400, 4000), found):
        assert len(df) > 0 and (df["exact"] >= T).all()


def _held_peak(run):
    """Peak bytes of the join's band records and candidate pairs held at once (task results in
    the synchronous scheduler's cache), while ``run()`` computes."""
    from dask.callbacks import Callback
    from dask.sizeof import sizeof

    mine = ("_block_keys", "_block_pairs", "_partition_pairs", "getitem")
    peak = [0]

    class Held(Callback):
        def _posttask(self, key, result, dsk, state, id):
            names = ((k[0] if isinstance(k, tuple) else k, v) for k, v in state["cache"].items())
            peak[0] = max(peak[0], sum(sizeof(v) for n, v in names if str(n).startswith(mine)))

    with Held():
        out = run()
    return peak[0], out


def _dup_codes(n, seed=0):
    """Random 8-bit codes, every 50th row repeated by the next one (pairs at estimate 1)."""
    c = np.random.default_rng(seed).integers(0, 256, (n, 128), dtype=np.uint8)
    c[1::50] = c[::50][:len(c[1::50])]
    return c


def test_the_data_held_at_once_does_not_grow_with_the_row_count():
    """One pass holds every band record of every block (25 bytes x rows x bands: 5 MB at 8000
    rows, 25 bands); with passes of pass_memory, the records of one pass, about
    ``total / ceil(total / pass_memory) <= pass_memory``, are held at once, plus the tuple a
    block's task returns while its pieces are taken (at most twice that), plus the candidates
    (a few kB here): bounded by 2 x pass_memory whatever the rows."""
    mem = 2**20
    peaks = []
    for n in (2000, 8000):
        codes = _dup_codes(n)
        peak, df = _held_peak(lambda: similarity_join(da.from_array(codes, chunks=(1000, -1)), T, bits=8,
                                                      pass_memory=mem).compute())
        assert _pairs(df) == {(i, i + 1) for i in range(0, n - 1, 50)}
        peaks.append(peak)
    assert 25 * 8000 * choose_bands(T, 128, 8)[0] > 4 * mem  # one pass would hold > 4 MiB
    assert max(peaks) <= 2 * mem, peaks


def test_passes_give_the_pairs_of_one_pass_once_whatever_the_partitioning(monkeypatch, tmp_path):
    import dask_kernels.similarity.join as join

    monkeypatch.setattr(join, "MIN_PASS_MEMORY", 1)
    X = _weighted_rows(groups=30)
    gcws = GCWS(scale=None, n_components=128, bits=4, seed=7, sampler="dart").fit(X)
    codes = gcws.transform(X)
    one = similarity_join(codes, T, bits=4).compute()
    n_records = len(X) * choose_bands(T, 128, 4)[0]
    assert join.choose_passes(n_records, 2**20) == 1
    featurize(X, gcws, store=str(tmp_path / "s.zarr"), block_rows=53, progress=False)
    runs = [similarity_join(da.from_array(codes, chunks=(c, -1)), T, bits=4, npartitions=p,
                            pass_memory=25 * n_records // passes).compute()
            for c, p, passes in ((len(X), 1, 7), (37, 5, 3), (100, 2, 16))]
    runs.append(similarity_join(str(tmp_path / "s.zarr"), T, npartitions=3, pass_memory=25 * n_records // 5).compute())
    key = ["i", "j"]
    assert len(one) > 50
    for r in runs:
        assert not r.duplicated(key).any()
        pd.testing.assert_frame_equal(r.sort_values(key).reset_index(drop=True),
                                      one.sort_values(key).reset_index(drop=True))


def test_a_cross_join_and_raw_rows_in_passes_give_the_pairs_of_one_pass(monkeypatch, tmp_path):
    import dask_kernels.similarity.join as join

    monkeypatch.setattr(join, "MIN_PASS_MEMORY", 1)
    X = _weighted_rows(groups=30, seed=4)
    X = X[np.random.default_rng(1).permutation(len(X))]
    codes = GCWS(scale=None, n_components=128, bits=8, seed=9, sampler="dart").fit_transform(X)
    np.save(tmp_path / "X.npy", X[:120])
    A, B = da.from_array(codes[:120], chunks=(50, -1)), da.from_array(codes[120:], chunks=(40, -1))
    one = similarity_join(A, T, B, bits=8, X=str(tmp_path / "X.npy"), other_X=X[120:]).compute()
    many = similarity_join(A, T, B, bits=8, X=str(tmp_path / "X.npy"), other_X=X[120:],
                           pass_memory=25 * 240 * 25 // 4).compute()  # 4 passes
    assert len(one) > 20 and not many.duplicated(["i", "j"]).any()
    pd.testing.assert_frame_equal(many.sort_values(["i", "j"]).reset_index(drop=True),
                                  one.sort_values(["i", "j"]).reset_index(drop=True))


def test_pass_memory_is_checked():
    codes = np.zeros((5, 8), np.uint8)
    for bad in (0, -1, 2**20 - 1, "1KiB", "lots", True, float("nan")):
        with pytest.raises(ValueError, match="pass_memory"):
            similarity_join(codes, 0.5, bits=8, pass_memory=bad)
    similarity_join(codes, 0.5, bits=8, pass_memory="1MiB")


def test_the_graph_grows_linearly_with_the_blocks(tmp_path):
    """Verification is one task per block of source (its pairs grouped by block of other inside
    the task), not one per pair of blocks: with the bucket partitions fixed, 4x the blocks give
    at most 4x the tasks and the graph's bytes."""
    import pickle

    X = _weighted_rows(groups=40)
    gcws = GCWS(scale=None, n_components=32, bits=8, seed=3, sampler="dart").fit(X)
    tasks, sizes = [], []
    for blocks in (8, 32):
        path = str(tmp_path / f"s{blocks}.zarr")
        featurize(X, gcws, store=path, block_rows=-(-len(X) // blocks), progress=False)
        g = dict(similarity_join(path, T, npartitions=4).__dask_graph__())
        tasks.append(len(g))
        sizes.append(len(pickle.dumps(g)))
    assert tasks[1] <= 4 * tasks[0] and sizes[1] <= 4 * sizes[0], (tasks, sizes)


def test_persisted_codes_on_a_cluster_give_the_local_pairs(local_cluster, monkeypatch):
    # a persisted array's chunks are Futures, whose keys leave the submitted graph: the join's
    # tasks must still receive the chunks (they received the key itself, and failed in Numba)
    import dask_kernels.similarity.join as join
    from distributed import Client

    monkeypatch.setattr(join, "MIN_PASS_MEMORY", 1)
    codes = np.random.default_rng(3).integers(0, 4, size=(600, 64)).astype(np.uint8)
    codes[300:] = codes[:300]
    ref = similarity_join(da.from_array(codes, chunks=(100, -1)), 0.8, bits=2).compute()
    records = 600 * choose_bands(0.8, 64, 2)[0]
    with Client(local_cluster):
        for pass_memory in (join.PASS_MEMORY, 25 * records // 3):  # one pass, and several
            assert (join.choose_passes(records, pass_memory) > 1) == (pass_memory != join.PASS_MEMORY)
            persisted = da.from_array(codes, chunks=(100, -1)).persist()
            held = similarity_join(persisted, 0.8, bits=2, pass_memory=pass_memory).compute()
            # and the lazy pairs keep the chunks alive when nothing else holds them
            pairs = similarity_join(da.from_array(codes, chunks=(100, -1)).persist(), 0.8, bits=2,
                                    pass_memory=pass_memory)
            for got in (held, pairs.compute()):
                pd.testing.assert_frame_equal(got.sort_values(["i", "j"], ignore_index=True),
                                              ref.sort_values(["i", "j"], ignore_index=True))
    assert len(ref) == 300


def test_raw_rows_of_a_scaled_store_are_verified_as_the_map_hashed_them(tmp_path):
    """GCWS's default scale="auto" hashes each column scaled to [-1, 1]: the codes estimate the
    GMM of those rows. X= (the raw rows featurize read) was verified unscaled, on another
    similarity (here one column in other units makes it near 1 for most pairs): pairs were
    kept, and their ``exact`` reported, on that one. Each pair at or above the threshold is
    missed with chance at most 1 - min_recall (0.001): under 0.2 expected among these."""
    rng = np.random.default_rng(0)
    base = rng.random(size=(400, 20)) * np.r_[1000, np.ones(19)]
    X = np.vstack([base, base[:200] * np.exp(rng.normal(0, 0.1, (200, 20)))])  # 200 near duplicates
    gcws = GCWS(n_components=128, sampler="dart").fit(X)
    assert gcws.scale_ is not None
    store = featurize(X, gcws, store=str(tmp_path / "s.zarr"), progress=False)
    truth, K = _truth(gcws.hashed_rows(X), T)
    assert 150 <= len(truth) <= 250 and len(_truth(X, T)[0]) > 30_000  # unscaled, most pairs are "similar"
    np.save(tmp_path / "X.npy", X)
    for raw in (X, str(tmp_path / "X.npy"), da.from_array(X, chunks=(100, -1))):
        got = similarity_join(store.path, T, X=raw).compute()
        pairs = _pairs(got)
        assert pairs <= truth and len(truth - pairs) <= 1, (len(truth), len(pairs - truth), len(truth - pairs))
        np.testing.assert_allclose(got["exact"], K[got["i"], got["j"]], rtol=1e-12)
    with pytest.raises(ValueError, match="X: rows of 3 columns, but the codes' map was fitted on 20: give the raw"):
        similarity_join(store.path, T, X=X[:, :3])
    np.save(tmp_path / "X3.npy", X[:, :3])
    with pytest.raises(ValueError, match="X3.npy: rows of 3 columns, but the codes' map was fitted on 20"):
        similarity_join(store.path, T, X=str(tmp_path / "X3.npy"))


def test_an_index_refuses_codes_of_another_width_than_bits():
    # 8-bit codes were indexed as bits=4 or bits=16, their estimates off by the other chance agreement
    X = np.random.default_rng(0).random((50, 6))
    codes = GCWS(n_components=32, bits=8, seed=1, scale=None, sampler="dart").fit(X).transform(X)
    assert codes.max() >= 16
    with pytest.raises(ValueError, match=r"codes: a code of \d+ cannot be 4-bit codes: give bits= of the GCWS map"):
        SimilarityIndex(codes, bits=4)
    with pytest.raises(ValueError, match="codes: uint8 codes cannot be 16-bit codes"):
        SimilarityIndex(codes, bits=16)
    index = SimilarityIndex(codes, bits=8)
    with pytest.raises(ValueError, match="query codes: uint16 codes|query codes: a code of"):
        index.query(codes.astype(np.uint16) << 4, 0.8)
    assert len(index.query(codes[:3], 0.8)) >= 3  # each row finds itself
    with pytest.raises(ValueError, match="source: uint8 codes cannot be 16-bit codes"):
        similarity_join(codes, 0.8, bits=16)


def test_raw_rows_holding_nan_or_infinity_are_refused_naming_the_row(tmp_path):
    # a NaN row's exact GMM was a number (1.0 against some rows): pairs were kept or dropped on it
    import scipy.sparse as sp

    X = _weighted_rows(groups=10)
    codes = GCWS(scale=None, n_components=64, bits=8, seed=1, sampler="dart").fit(X).transform(X)
    bad = X.copy()
    bad[5, 3] = np.nan
    np.save(tmp_path / "bad.npy", bad)
    chunked = da.from_array(codes, chunks=(20, -1))
    for rows, where in ((bad, "X"), (sp.csr_matrix(bad), "X"), (da.from_array(bad, chunks=(20, -1)), "X"),
                        (str(tmp_path / "bad.npy"), "bad.npy")):
        with pytest.raises(ValueError, match=rf"NaN or infinity \(nan\) in row 5 of \S*{where}, column 3"):
            similarity_join(chunked, 0.5, bits=8, X=rows).compute()
    infinite = X.copy()
    infinite[40, 2] = np.inf
    with pytest.raises(ValueError, match=r"\(inf\) in row 40 of other_X, column 2"):
        similarity_join(chunked, 0.5, chunked, bits=8, X=X, other_X=infinite).compute()


def test_npartitions_must_be_a_positive_integer():
    # npartitions=-1 gave an empty result, as if no pair were similar; 0 and 1.5 were taken as others
    codes = np.zeros((5, 8), np.uint8)
    assert len(similarity_join(codes, 0.5, bits=8, npartitions=2).compute()) == 10  # equal rows: every pair
    for bad in (-1, 0, 1.5, True):
        with pytest.raises(ValueError, match="npartitions must be a positive integer"):
            similarity_join(codes, 0.5, bits=8, npartitions=bad)


def test_a_join_refuses_codes_of_another_width_than_bits():
    # 8-bit codes joined as bits=4 gave pairs on estimates off by the other chance agreement
    X = np.random.default_rng(0).random((50, 6))
    codes = GCWS(n_components=32, bits=8, seed=1, scale=None, sampler="dart").fit(X).transform(X)
    assert codes.max() >= 16
    wide = rf"a code of {codes.max()} cannot be 4-bit codes: give bits= of the GCWS map"
    with pytest.raises(ValueError, match="source: " + wide):
        similarity_join(codes, 0.5, bits=4)
    with pytest.raises(ValueError, match="other: " + wide):
        similarity_join(codes & 15, 0.5, codes, bits=4)
    mixed = codes & 15
    mixed[30] = codes[30]
    top = codes[30].max()
    assert top >= 16
    with pytest.raises(ValueError, match=rf"source rows 20\.\.39: a code of {top} cannot be 4-bit"):
        similarity_join(da.from_array(mixed, chunks=(20, -1)), 0.5, bits=4).compute()  # found as it is read
    assert len(similarity_join(codes & 15, 0.5, bits=4).compute()) > 0
    with pytest.raises(ValueError, match=r"source: expected a 2-D array of unsigned integer codes.*shape \(32,\)"):
        similarity_join(codes[0], 0.5, bits=8)


def test_index_query_and_top_k_arguments_are_checked():
    # bands without rows was a TypeError from int(None); with bands given, a threshold of 1.5 or NaN
    # found nothing; candidates=-1 was "negative dimensions are not allowed", 0 the default
    X = np.random.default_rng(0).random((40, 6))
    codes = GCWS(n_components=32, bits=8, seed=1, scale=None, sampler="dart").fit(X).transform(X)
    index = SimilarityIndex(codes, bits=8)
    assert len(index.query(codes[:2], 0.9, bands=8, rows=4)) >= 2  # each finds itself
    with pytest.raises(ValueError, match="give both bands and rows, or neither"):
        index.query(codes[:2], 0.9, bands=8)
    for bad in (1.5, float("nan"), 0.0):
        with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\)"):
            index.query(codes[:2], bad, bands=8, rows=4)
    assert index.top_k(codes[:2], 2, candidates=1)["row"].tolist()[::2] == [0, 1]
    for name, bad in (("candidates", -1), ("candidates", 0), ("trees", 0), ("k", 0), ("candidates", 2.5)):
        with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
            index.top_k(codes[:2], **dict({"k": 2}, **{name: bad}))


def test_passes_keep_a_pair_cut_off_by_an_oversized_bucket_in_another_pass(monkeypatch):
    # a pair was kept only in the pass of its first shared band: when that band's bucket was
    # oversized and cut the pair off, the pass of a later band that found it dropped it (digits
    # at 0.8 with 2 passes: 5 of 1,532 pairs lost)
    import dask_kernels.similarity.join as join

    monkeypatch.setattr(join, "MIN_PASS_MEMORY", 1)
    X = load_digits().data[:900]
    codes = GCWS(scale=None, n_components=64, bits=8, seed=0, sampler="dart").fit_transform(X)
    bands = choose_bands(T, 64, 8)[0]
    one = similarity_join(codes, T, bits=8, max_bucket=4).compute()
    assert len(one) > 100 and len(_pairs(one)) > len(_pairs(similarity_join(codes, T, bits=8, max_bucket=2).compute()))
    for passes in (2, 3, 7):
        many = similarity_join(codes, T, bits=8, max_bucket=4, pass_memory=25 * len(X) * bands // passes).compute()
        assert not many.duplicated(["i", "j"]).any()
        pd.testing.assert_frame_equal(many.reset_index(drop=True), one.reset_index(drop=True))


def test_stores_of_maps_fitted_apart_are_refused_saying_how_to_share_the_map(tmp_path):
    # the same parameters fitted on other rows are another map (dart's scale is learned): the
    # refusal said only that the maps differ, not what to do
    X = _weighted_rows(groups=10)
    X = X[np.random.default_rng(0).permutation(len(X))]
    a = featurize(X[:40], GCWS(scale=None, n_components=32, bits=8, sampler="dart"), store=str(tmp_path / "a.zarr"),
                  progress=False)
    apart = featurize(X[40:], GCWS(scale=None, n_components=32, bits=8, sampler="dart"),
                      store=str(tmp_path / "b.zarr"), progress=False)
    assert apart.spec["params"] == a.spec["params"] and apart.spec != a.spec
    with pytest.raises(ValueError, match="different maps.*featurize both with one fitted map.*feature_map.*--spec"):
        similarity_join(a.path, T, apart.path)
    shared = featurize(X[40:], a.feature_map, store=str(tmp_path / "c.zarr"), progress=False)
    cross = similarity_join(a.path, T, shared.path, X=X[:40], other_X=X[40:]).compute()
    truth = {(i, j - 40) for i, j in _truth(X, T)[0] if i < 40 <= j}
    assert len(truth) > 10 and _pairs(cross) == truth


def test_an_index_with_a_spec_that_is_no_json_is_refused_before_anything_is_written(tmp_path):
    # the codes were written, then json.dump failed with a TypeError, leaving a folder that a
    # second save refused as not an index folder; loading a file said "Not a directory"
    codes = np.zeros((4, 8), np.uint8)
    with pytest.raises(ValueError, match="spec cannot be saved as JSON"):
        SimilarityIndex(codes, 8, spec={"gamma": np.float32(1)}).save(tmp_path / "idx")
    assert not (tmp_path / "idx").exists()
    SimilarityIndex(codes, 8, spec={"gamma": 1.0}).save(tmp_path / "idx")
    assert SimilarityIndex.load(tmp_path / "idx").spec == {"gamma": 1.0}
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a similarity index"):
        SimilarityIndex.load(tmp_path / "file")


def test_a_raw_rows_file_replaced_before_the_join_runs_is_refused(tmp_path):
    # its blocks were read as they now were: the pair kernels read past the rows of a shorter or
    # narrower file and kept pairs on what they found there
    X = _weighted_rows(groups=20)
    codes = GCWS(scale=None, n_components=64, bits=8, seed=1, sampler="dart").fit(X).transform(X)
    path = str(tmp_path / "X.npy")
    np.save(path, X)
    join = similarity_join(da.from_array(codes, chunks=(50, -1)), T, bits=8, X=path)
    np.save(path, X[:100, :3])
    with pytest.raises(ValueError, match=r"X.npy: now of shape \(100, 3\), not \(140, 40\).*changed while"):
        join.compute()


def test_a_cross_join_checks_raw_rows_of_both_sides_alike():
    # other_X narrower than X was read past its columns (pairs kept on what was there); a dense X
    # with a sparse other_X failed in Numba's typing
    import scipy.sparse as sp

    X = _weighted_rows(groups=20)
    X = X[np.random.default_rng(2).permutation(len(X))]
    codes = GCWS(scale=None, n_components=64, bits=8, seed=1, sampler="dart").fit(X).transform(X)
    A, B = codes[:70], codes[70:]
    dense = similarity_join(A, T, B, bits=8, X=X[:70], other_X=X[70:]).compute()
    assert len(dense) > 10
    for xa, xb in ((X[:70], sp.csr_matrix(X[70:])), (sp.csr_matrix(X[:70]), X[70:])):
        mixed = similarity_join(A, T, B, bits=8, X=xa, other_X=xb).compute()
        pd.testing.assert_frame_equal(mixed, dense)
    with pytest.raises(ValueError, match="X has 40 columns and other_X 20: give the raw rows of both sides"):
        similarity_join(A, T, B, bits=8, X=X[:70], other_X=X[70:, :20])


def test_codes_of_no_hashes_are_refused_as_codes():
    # top_k divided by zero; the join and query named an n_hashes the caller never gave
    codes = np.zeros((5, 0), np.uint8)
    with pytest.raises(ValueError, match=r"codes: expected unsigned integer codes.*shape \(5, 0\)"):
        SimilarityIndex(codes, 8)
    with pytest.raises(ValueError, match=r"source: expected a 2-D array of unsigned integer codes.*shape \(5, 0\)"):
        similarity_join(codes, 0.5, bits=8)


def test_codes_of_unknown_chunk_sizes_are_refused_saying_what_to_do():
    # a dask DataFrame's to_dask_array(): "cannot convert float NaN to integer" (and a RuntimeWarning)
    import dask.dataframe as dd

    codes = np.random.default_rng(0).integers(0, 256, (60, 16)).astype(np.uint8)
    arr = dd.from_pandas(pd.DataFrame(codes), npartitions=3).to_dask_array()
    with pytest.raises(ValueError, match=r"source: a dask array of unknown chunk sizes.*compute_chunk_sizes\(\)"):
        similarity_join(arr, 0.9, bits=8)
    codes[40] = codes[7]
    arr = dd.from_pandas(pd.DataFrame(codes), npartitions=3).to_dask_array()
    assert _pairs(similarity_join(arr.compute_chunk_sizes(), 0.9, bits=8).compute()) == {(7, 40)}


def test_buckets_cut_by_max_bucket_are_logged(caplog):
    # the cap lost pairs without a word (12 % of them at 0.9 on mlbench's Vehicle)
    import logging

    codes = np.zeros((100, 8), np.uint8)  # one bucket of 100 equal rows in every band
    with caplog.at_level(logging.WARNING, logger="dask_kernels.similarity.join"):
        capped = similarity_join(codes, 0.5, bits=8, max_bucket=10).compute()
    assert len(capped) < 100 * 99 // 2
    bands = choose_bands(0.5, 8, 8)[0]  # a bucket per band: 4,950 pairs, 945 compared (each row with the next 10)
    assert (f"max_bucket=10 cut {bands} bucket(s) of more than 11 rows (the largest 100), leaving {bands * 4005} "
            "pairs of their rows uncompared (81 % of this partition's)") in caplog.text, caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dask_kernels.similarity.join"):
        whole = similarity_join(codes, 0.5, bits=8, max_bucket=99).compute()
    assert len(whole) == 100 * 99 // 2 and "max_bucket" not in caplog.text


def test_a_query_gathers_its_candidates_in_batches_not_all_at_once(monkeypatch):
    # a pair comes once per band it shares: 100 queries of 1,000 equal rows held 32 x the 100,000
    # results at once (and sorted them as rows of two columns), 90 times their memory
    import tracemalloc

    import dask_kernels.similarity.index as index_module

    monkeypatch.setattr(index_module, "_BATCH", 2**16, raising=False)
    codes = np.random.default_rng(0).integers(0, 256, (2000, 64)).astype(np.uint8)
    codes[:1000] = 0  # 1,000 equal rows (empty rows hash alike)
    index = SimilarityIndex(codes, 8)
    q = np.concatenate([codes[:100], codes[1000:1010]])
    index.query(q[:1], 0.5)  # the tables, built once
    tracemalloc.start()
    try:
        got = index.query(q, 0.5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    est = code_estimate((q[:, None, :] == codes[None, :, :]).sum(2), 64, 8)
    assert _pairs(got.rename(columns={"query": "i", "row": "j"})) == set(zip(*np.nonzero(est >= 0.5)))
    assert len(got) >= 100 * 1000 and got["query"].is_monotonic_increasing
    assert peak < 12 * 2**20, peak / 2**20


def test_a_bucket_barely_over_max_bucket_is_not_logged(caplog):
    # iris at 0.95 (the README's example): one bucket of 68 rows leaves 6 of its pairs uncompared,
    # found through other bands; a warning there would be noise
    import logging

    X = load_iris().data
    codes = GCWS(n_components=256, bits=8, sampler="dart", scale=None).fit(X).transform(X)
    with caplog.at_level(logging.WARNING, logger="dask_kernels.similarity.join"):
        pairs = similarity_join(codes, 0.95, bits=8, X=X).compute()
    assert _pairs(pairs) == _truth(X, 0.95)[0] and "max_bucket" not in caplog.text
