"""Threads over row blocks in the public transform: same bytes for any n_jobs, every map (but for
the rounding of a product that RFF and NRFF run on the BLAS's own threads)."""

import json
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from _blas_rounding import assert_same_features
from threadpoolctl import threadpool_limits

from dask_kernels import from_spec, registered_maps
from dask_kernels.sidecar import map_arrays
from dask_kernels.maps._parallel import BLOCK_ROWS, GEMM_BLOCKS, blocks_of, effective_n_jobs, row_blocks
from dask_kernels.maps._parallel import _POOLS, _pool, transform_rows, usable_cpus

#: Small, fast parameters per method; a method not listed is built with its defaults.
PARAMS = {
    "gcws": [dict(n_components=64, seed=3), dict(n_components=64, seed=3, sampler="dart")],
    "rff": [dict(n_components=300, gamma=0.3, seed=1), dict(n_components=64, kernel="laplacian", dtype="float64")],
    "nrff": [dict(n_components=300, gamma=2.0, seed=2)],
    "fastfood": [dict(n_components=300, gamma=0.3, seed=4), dict(n_components=100, radial="matern", dtype="float64")],
}


def _maps():
    for method, cls in sorted(registered_maps().items()):
        for params in PARAMS.get(method, [{}]):
            if "sampler" in params and "sampler" not in cls().get_params():
                continue
            yield pytest.param(cls, params, id=f"{method}-{'-'.join(f'{k}={v}' for k, v in params.items())}")


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5 * BLOCK_ROWS + 37, 20))  # several blocks and a ragged end
    X[rng.uniform(size=X.shape) < 0.5] = 0.0
    X[7] = 0.0
    return X


@pytest.mark.parametrize("cls, params", list(_maps()))
def test_every_map_is_bitwise_identical_for_any_thread_count(cls, params, X):
    fmap = cls(**params).fit(X)
    inputs = [X] + ([sp.csr_matrix(X)] if fmap.accepts_sparse else [])
    for data in inputs:
        serial = transform_rows(fmap.transform_block, data, n_jobs=1)
        assert serial.shape[0] == X.shape[0]
        for n_jobs in (2, 3, -1, None):
            np.testing.assert_array_equal(transform_rows(fmap.transform_block, data, n_jobs=n_jobs), serial)
    if "n_jobs" in fmap.get_params():
        for n_jobs in (1, 2):
            out = fmap.set_params(n_jobs=n_jobs).transform(X)
            out = out.toarray() if sp.issparse(out) else out
            # the first row block computed directly, with no threads at all and BLAS held to
            # one thread as the public transform holds it (the whole block: BLAS-based maps such
            # as Nystroem agree across other block sizes and BLAS thread counts only to rounding)
            a, b = blocks_of(fmap.transform_block, X.shape[0])[0]
            with threadpool_limits(1, user_api="blas"):
                ref = fmap.transform_block(X[a:b], row_offset=a)
            np.testing.assert_array_equal(out[a:b], ref.toarray() if sp.issparse(ref) else ref)


@pytest.mark.parametrize("cls, params", list(_maps()))
def test_n_jobs_stays_out_of_the_spec(cls, params, X):
    fmap = cls(**params).fit(X[:50])
    if "n_jobs" not in fmap.get_params():
        # the package's own maps must offer it; maps other tests register need not
        assert not cls.__module__.startswith("dask_kernels."), f"{cls.__name__} has no n_jobs parameter"
        return
    a = fmap.set_params(n_jobs=1).spec_json()
    b = fmap.set_params(n_jobs=3).spec_json()
    assert a == b and "n_jobs" not in json.loads(a)["params"]
    # a spec written before n_jobs existed (no such key) still loads, with the default
    assert from_spec(a, arrays=map_arrays(fmap)).n_jobs is None  # (arrays: maps with a sidecar)


def test_blocks_depend_on_the_row_count_only():
    for n in (0, 1, BLOCK_ROWS, BLOCK_ROWS + 1, 1000, 12345):
        blocks = row_blocks(n)
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        assert all(b[1] == c[0] for b, c in zip(blocks, blocks[1:]))
        sizes = [b - a for a, b in blocks]
        assert max(sizes) <= BLOCK_ROWS and max(sizes) - min(sizes) <= 1


def test_gemm_maps_use_large_blocks_that_still_fill_every_cpu():
    from dask_kernels import NRFF, RFF

    for cls in (RFF, NRFF):
        fmap = cls(n_components=8).fit(np.ones((2, 3)))
        assert blocks_of(fmap.transform_block, 5000) == row_blocks(5000, *GEMM_BLOCKS)
    block_rows, min_rows = GEMM_BLOCKS
    for n in (1, min_rows, 2 * min_rows, 1000, 5000):
        sizes = [b - a for a, b in row_blocks(n, block_rows, min_rows)]
        assert sum(sizes) == n and max(sizes) <= block_rows and max(sizes) - min(sizes) <= 1
        assert len(sizes) >= min(usable_cpus(), n // min_rows)
        assert len(sizes) == 1 or min(sizes) >= min_rows // 2


def test_blocks_run_on_several_threads_and_blas_is_held_to_one():
    from threadpoolctl import threadpool_info

    seen, barrier = set(), threading.Barrier(2, timeout=10)

    def block_fn(rows, row_offset):
        if threading.get_ident() not in seen:
            seen.add(threading.get_ident())
            barrier.wait()  # two threads must be inside a block at the same time
        blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        assert all(n == 1 for n in blas), blas
        return rows * 2

    X = np.arange(4.0 * BLOCK_ROWS).reshape(-1, 1)
    np.testing.assert_array_equal(transform_rows(block_fn, X, n_jobs=2), X * 2)
    assert len(seen) >= 2


def test_default_is_one_thread_off_the_main_thread():
    # inside a Dask worker thread (or any pool) the default must not start a nested pool
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("n", effective_n_jobs(None)))
    t.start()
    t.join()
    assert result["n"] == 1
    assert effective_n_jobs(None) >= 1 and effective_n_jobs(-1) >= effective_n_jobs(-2) >= 1
    assert effective_n_jobs(3) == 3
    with pytest.raises(ValueError, match="n_jobs == 0"):
        effective_n_jobs(0)


def test_errors_name_the_global_row():
    from dask_kernels import GCWS

    X = np.ones((3 * BLOCK_ROWS, 4))
    X[2 * BLOCK_ROWS + 5] = [1e-300, 0, 0, 0]  # out of DartMinHash's range, in the third block
    gcws = GCWS(n_components=8, sampler="dart", scale=None).fit(X[:10])
    with pytest.raises(ValueError, match=f"row {2 * BLOCK_ROWS + 5}"):
        gcws.set_params(n_jobs=2).transform(X)


def test_the_pool_is_reused_and_never_nests():
    # the worker threads persist between calls (no start-up per call), and a block that calls
    # transform_rows again with n_jobs=2 from a pool thread runs it serially instead of waiting
    # on its own busy pool (a deadlock with a shared pool). Two pool threads run blocks at once,
    # so each block records its own inner calls (one shared list interleaves: this test failed
    # 1 run in 50 that way). ThreadPoolExecutor starts its threads lazily (a submit starts one
    # only when no thread is idle), so a call may use fewer than 2; what must hold whatever the
    # timing is that the pool stays the same object with at most its 2 threads, none replaced.
    X = np.arange(4.0 * BLOCK_ROWS).reshape(-1, 1)
    outer_threads = set()

    def block_fn(rows, row_offset):
        inner_threads = []

        def inner_fn(r, row_offset):
            inner_threads.append(threading.get_ident())
            return r + 1

        inner = transform_rows(inner_fn, np.tile(rows, (4, 1)), n_jobs=2)  # 4 blocks
        assert inner_threads == [threading.get_ident()] * 4  # serially, all on this very thread
        outer_threads.add(threading.get_ident())
        return inner[: len(rows)] * 2

    def pool_threads():  # the threads of the pool of 2 (named by its thread count)
        return {t.ident for t in threading.enumerate() if t.name.startswith("dask-kernels-transform-2_")}

    pool, pools = _pool(2), set(_POOLS)
    for _ in range(2):
        before = pool_threads()
        np.testing.assert_array_equal(transform_rows(block_fn, X, n_jobs=2), (X + 1) * 2)
        after = pool_threads()
        assert before <= after and len(after) <= 2  # kept between calls, never more than 2
        assert outer_threads <= after  # the blocks ran on the pool's threads
    assert _pool(2) is pool and set(_POOLS) == pools  # the same pool; no other made for inner calls


def test_planned_phases_log_their_time_at_debug(monkeypatch, caplog):
    # With the module's logger at DEBUG, each phase of a planned transform (here RFF's product on
    # the BLAS's threads, then its cosine on the pool) logs its wall-clock and CPU seconds, in
    # order; at INFO nothing is logged (and nothing measured).
    import logging
    import time

    from dask_kernels import RFF
    from dask_kernels.maps import _fourier
    from dask_kernels.maps._parallel import OnBlas

    monkeypatch.setattr(_fourier, "BLAS_TABLE_MIN", 0)  # the product on all rows at this small W
    X = np.random.default_rng(0).normal(size=(8200, 40)).astype(np.float32)
    rff = RFF(n_components=1100, gamma=0.1, seed=5, n_jobs=2).fit(X)
    planned = rff._transform_phases(X)
    expected = [] if planned is None else ["blas" if isinstance(p, OnBlas) else "pool" for p in planned[1]]
    if usable_cpus() == 2:
        assert expected == ["blas", "pool"]
    with caplog.at_level(logging.INFO, logger="dask_kernels.maps._parallel"):
        rff.transform(X)
    assert not caplog.records
    with caplog.at_level(logging.DEBUG, logger="dask_kernels.maps._parallel"):
        c0 = time.process_time()
        Z = rff.transform(X)
        cpu = time.process_time() - c0
    phases = [r.phase for r in caplog.records if hasattr(r, "phase")]
    assert [(number, kind) for number, kind, _, _ in phases] == list(enumerate(expected, 1))
    assert all(wall > 0 and 0 <= c <= cpu for _, _, wall, c in phases)
    assert sum(c for *_, c in phases) <= cpu
    # timing changes no value: the same plan (BLAS's own threads) bitwise; one thread (BLAS held
    # to one thread) only to the rounding of the product
    np.testing.assert_array_equal(Z, rff.transform(X))
    assert_same_features(rff, X, rff.set_params(n_jobs=1).transform(X), Z)


def test_row_blocks_hold_numpys_blas_to_one_thread():
    # threadpoolctl before 3.5 found no BLAS in NumPy 2 (its scipy-openblas), so the limit did
    # nothing: row blocks on several threads each started the BLAS's threads
    from threadpoolctl import threadpool_info

    from dask_kernels.maps._parallel import _one_blas_thread

    with _one_blas_thread():
        blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas), threadpool_info()


def test_a_blas_threadpoolctl_cannot_find_is_warned_once(monkeypatch):
    import warnings

    import threadpoolctl

    from dask_kernels.maps import _parallel

    class Blind(threadpoolctl.ThreadpoolController):
        def __init__(self):
            self.lib_controllers = []

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Blind)
    monkeypatch.setattr(_parallel, "_controller", None)
    with pytest.warns(RuntimeWarning, match="finds no BLAS library .* Upgrade threadpoolctl"):
        with _parallel._one_blas_thread():
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _parallel._one_blas_thread():  # once per process
            pass
