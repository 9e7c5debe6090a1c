"""Nystroem: the invariants of section 4 (exact on landmarks, below the kernel on the diagonal,
Z_m^T Z_m = K_mm, biased low), agreement with scikit-learn's Nystroem, partition invariance of the
fit and of stored features (threads, 1 vs 7 partitions, a 2-worker LocalCluster), a graph whose
size does not grow with blocks x landmarks, and the sidecar refusing tampered arrays."""

import json
import os
import pickle
import zipfile

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.kernel_approximation import Nystroem as SkNystroem
from sklearn.linear_model import SGDClassifier

from dask_kernels import KernelModel, Nystroem, featurize, from_spec, load_model, open_store
from dask_kernels.exact import cosine_rbf_kernel, gmm_kernel, laplacian_kernel, minmax_kernel, rbf_kernel
from dask_kernels.io import from_sparse
from dask_kernels.maps import load_map, save_map
from dask_kernels.sidecar import SidecarError

KERNELS = ["gmm", "minmax", "rbf", "laplacian", "cosine_rbf"]
RNG = np.random.default_rng(12)
X = RNG.random((300, 7)) * (RNG.random((300, 7)) < 0.7)      # nonnegative, some zeros (min-max ok)
XS = RNG.standard_normal((300, 7))                               # signed


def exact(kernel, A, B, gamma):
    """The package's reference kernels (cdist / pairwise-merge code, not the Nystroem path)."""
    return {"gmm": lambda: gmm_kernel(A, B), "minmax": lambda: minmax_kernel(A, B),
            "rbf": lambda: rbf_kernel(A, B, gamma=gamma), "laplacian": lambda: laplacian_kernel(A, B, gamma=gamma),
            "cosine_rbf": lambda: cosine_rbf_kernel(A, B, gamma=gamma)}[kernel]()


def data_for(kernel):
    return X if kernel == "minmax" else XS


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_block_matches_the_reference_kernels(kernel):
    from dask_kernels.exact.pairwise import kernel_block

    A = data_for(kernel)[:50].copy()
    A[3] = 0.0                                   # zero rows: GMM(0, 0) = 1, cosine u = 0
    B = A[10:30].copy()
    B[0] = 0.0
    ref = exact(kernel, A, B, 0.4)
    for Xa in (A, sp.csr_matrix(A)):
        for Yb in (B, sp.csr_matrix(B)):
            assert np.abs(kernel_block(kernel, Xa, Yb, gamma=0.4) - ref).max() < 1e-12
    K32 = kernel_block(kernel, A, B, gamma=0.4, dtype=np.float32)
    assert K32.dtype == np.float32 and np.abs(K32 - ref).max() < 1e-5


@pytest.mark.parametrize("landmarks", ["uniform", "kmeans++"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_landmark_features_reproduce_the_kernel_row(kernel, landmarks):
    A = data_for(kernel)
    ny = Nystroem(n_components=40, kernel=kernel, landmarks=landmarks, seed=3, dtype="float64").fit(A)
    Z = ny.transform(A)
    rows = ny.landmark_rows_
    assert len(np.unique(rows)) == 40 and ny.rank_ == 40
    K = exact(kernel, A, A[rows], ny.gamma_)
    # z(x) . z(l) = k(x, l) for every landmark l, every row x: exact up to float64 rounding
    assert np.abs(Z @ Z[rows].T - K).max() < 1e-10


@pytest.mark.parametrize("kernel", KERNELS)
def test_features_stay_below_the_kernel_and_are_biased_low(kernel):
    A = data_for(kernel)
    ny = Nystroem(n_components=25, kernel=kernel, seed=1, dtype="float64").fit(A)
    Z = ny.transform(A)
    K = exact(kernel, A, A, ny.gamma_)
    # ||z(x)||^2 = k_x^T K_mm^+ k_x <= k(x, x) = 1 (Schur complement of a PSD matrix)
    assert (np.einsum("ij,ij->i", Z, Z) <= np.diag(K) + 1e-12).all()
    # K - Z Z^T is PSD, so the mean error over all pairs is >= 0; with 25 of 300 rows it is > 0
    err = K - Z @ Z.T
    assert err.mean() > 1e-4
    assert np.linalg.eigvalsh(err).min() > -1e-9
    # float32 output: the same features to float32 rounding, still below the diagonal
    Z32 = Nystroem(n_components=25, kernel=kernel, seed=1).fit(A).transform(A)
    assert Z32.dtype == np.float32
    assert np.abs(Z32 @ Z32.T - Z @ Z.T).max() < 1e-4
    assert (np.einsum("ij,ij->i", Z32.astype(np.float64), Z32) <= 1 + 1e-5).all()


@pytest.mark.parametrize("kernel", KERNELS)
def test_all_rows_as_landmarks_give_the_gram_matrix(kernel):
    # m = n: the landmarks' features (columns z(l_i)) satisfy Z_m^T Z_m = K_mm
    A = data_for(kernel)[:60]
    ny = Nystroem(n_components=60, kernel=kernel, seed=5, dtype="float64").fit(A)
    assert sorted(ny.landmark_rows_) == list(range(60))
    Zm = ny.transform(A).T                     # columns are z(x_i)
    K = exact(kernel, A, A, ny.gamma_)
    assert np.abs(Zm.T @ Zm - K).max() < 1e-9


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_same_landmarks_as_sklearn_nystroem_give_the_same_kernel(kernel):
    ny = Nystroem(n_components=30, kernel=kernel, gamma=0.2, seed=2, dtype="float64").fit(XS)
    L = XS[ny.landmark_rows_]
    sk = SkNystroem(kernel=kernel, gamma=0.2, n_components=30, random_state=0).fit(L)  # basis = all of L
    Zo, Zs = ny.transform(XS), sk.transform(XS)
    # features differ by an orthogonal rotation (eigenvector signs/order): compare Z Z^T
    assert np.abs(Zo @ Zo.T - Zs @ Zs.T).max() < 1e-8


def test_dense_and_sparse_fit_agree_and_gmm_sparse_matches_exact():
    S = sp.csr_matrix(X)
    nd = Nystroem(n_components=20, kernel="gmm", seed=4, dtype="float64").fit(X)
    ns = Nystroem(n_components=20, kernel="gmm", seed=4, dtype="float64").fit(S)
    assert sp.issparse(ns.landmarks_) and np.array_equal(ns.landmark_rows_, nd.landmark_rows_)
    assert np.abs(ns.transform(S) - nd.transform(X)).max() < 1e-12
    assert np.abs(ns.transform(X) - nd.transform(S)).max() < 1e-12


def _stores_equal(a, b):
    return np.array_equal(np.asarray(a.features), np.asarray(b.features))


@pytest.mark.parametrize("landmarks", ["uniform", "kmeans++"])
def test_partition_invariance_of_fit_and_stored_features(tmp_path, landmarks):
    params = dict(n_components=32, kernel="gmm", landmarks=landmarks, seed=9)
    one = Nystroem(**params).fit(da.from_array(XS, chunks=300))
    seven = Nystroem(**params).fit(da.from_array(XS, chunks=43))       # 7 partitions
    mem = Nystroem(**params).fit(XS)
    sparse7 = Nystroem(**params).fit(from_sparse(sp.csr_matrix(XS), block_rows=43))
    for other in (seven, mem):
        assert other.spec() == one.spec()                     # same sha256 of the fitted arrays
        assert np.array_equal(other.landmark_rows_, one.landmark_rows_)
    assert np.array_equal(sparse7.landmark_rows_, one.landmark_rows_)
    s1 = featurize(da.from_array(XS, chunks=300), one, store=str(tmp_path / "1.zarr"), block_rows=50, progress=False)
    s7 = featurize(da.from_array(XS, chunks=43), seven, store=str(tmp_path / "7.zarr"), block_rows=50, progress=False)
    assert _stores_equal(s1, s7)
    # an unfitted map handed to featurize is fitted on all rows, not on the first block
    s0 = featurize(da.from_array(XS, chunks=43), Nystroem(**params), store=str(tmp_path / "0.zarr"), block_rows=50,
                   progress=False)
    assert s0.spec == s1.spec and _stores_equal(s0, s1)


def test_fit_from_readers_npy_and_svmlight(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    from dask_kernels import read_npy, read_svmlight

    np.save(tmp_path / "x.npy", XS)
    ref = Nystroem(n_components=20, kernel="laplacian", seed=8).fit(XS)
    assert Nystroem(n_components=20, kernel="laplacian", seed=8).fit(
        read_npy(str(tmp_path / "x.npy"), block_rows=43)).spec() == ref.spec()
    A = np.round(X, 3)
    dump_svmlight_file(A, np.zeros(len(A)), str(tmp_path / "x.svm"), zero_based=False)
    parts = read_svmlight(str(tmp_path / "x.svm"), n_features=7, blocksize=2000)
    assert parts.n_partitions > 3
    a = Nystroem(n_components=20, kernel="minmax", seed=8).fit(parts)
    b = Nystroem(n_components=20, kernel="minmax", seed=8).fit(sp.csr_matrix(A))
    assert a.spec() == b.spec()


def test_cli_spec_file_finds_its_sidecar(tmp_path):
    from dask_kernels.cli import build_parser
    from dask_kernels.cli.featurize import build_map

    ny = Nystroem(n_components=12, kernel="gmm", seed=4).fit(XS)
    path = save_map(ny, str(tmp_path / "ny.json"))
    args = build_parser().parse_args(["featurize", "in.npy", "out.zarr", "--spec", path])
    assert np.array_equal(build_map(args).transform(XS), ny.transform(XS))


def test_uniform_landmarks_depend_on_the_seed_and_row_ids_only():
    a = Nystroem(n_components=10, seed=1).fit(XS).landmark_rows_
    b = Nystroem(n_components=10, seed=2).fit(XS).landmark_rows_
    c = Nystroem(n_components=10, seed=1).fit(XS[::-1].copy()).landmark_rows_   # other rows, same ids
    assert not np.array_equal(a, b) and np.array_equal(a, c)


def test_partition_invariance_on_a_two_worker_cluster(tmp_path):
    from distributed import Client, LocalCluster

    params = dict(n_components=24, kernel="rbf", gamma=0.3, seed=6)
    ref = Nystroem(**params).fit(XS)
    ref_store = featurize(XS, ref, store=str(tmp_path / "ref.zarr"), block_rows=40, progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, \
            Client(lc) as client:
        fitted = Nystroem(**params).fit(da.from_array(XS, chunks=43))
        s = featurize(da.from_array(XS, chunks=43), fitted, store=str(tmp_path / "c.zarr"), block_rows=40,
                      progress=False)
        assert len(client.scheduler_info()["workers"]) == 2
        # the arrays were scattered once, and each worker rebuilt and verified the map once
        rebuilt = client.run(lambda: len(__import__("dask_kernels.pipeline.tasks").pipeline.tasks._REBUILT))
        assert sorted(rebuilt.values()) == [1, 1]
    assert fitted.spec() == ref.spec()
    assert _stores_equal(s, ref_store)


def _task_bytes(graph):
    """Bytes of every task pickled on its own: what workers receive per task. (Pickling the
    whole graph at once would hide per-task copies of one object behind pickle's memo.)"""
    import cloudpickle

    return sum(len(cloudpickle.dumps(task)) for task in dict(graph).values())


def _graph_bytes(collection):
    return _task_bytes(collection.__dask_graph__())


@pytest.mark.parametrize("sparse", [False, True])
def test_graph_size_does_not_grow_with_blocks_times_landmarks(sparse):
    rows = np.abs(RNG.standard_normal((2000, 60)))

    def per_block(m):
        """Task bytes added per extra block (10 -> 100 blocks), and one copy of the arrays."""
        ny = Nystroem(n_components=m, kernel="rbf", seed=0).fit(rows)

        def lazy(n_blocks):
            block = 2000 // n_blocks
            src = from_sparse(sp.csr_matrix(rows), block_rows=block) if sparse else \
                da.from_array(rows, chunks=(block, -1))
            return featurize(src, ny)

        assert np.abs(lazy(100).compute() - ny.transform(rows)).max() < 1e-5
        return (_graph_bytes(lazy(100)) - _graph_bytes(lazy(10))) / 90, ny.landmarks_.nbytes + ny.normalization_.nbytes

    small, _ = per_block(16)
    big, copy = per_block(256)
    # each block costs the same few task bytes (spec text, keys) whatever m: the fitted arrays
    # (647 kB at m = 256) are one shared key, never part of a block's task
    assert copy > 600_000
    assert big < 0.01 * copy
    assert abs(big - small) < 64


@pytest.mark.parametrize("sparse", [False, True])
def test_store_writer_graph_holds_the_fitted_arrays_once(tmp_path, monkeypatch, sparse):
    import importlib

    fz = importlib.import_module("dask_kernels.pipeline.featurize")

    rows = np.abs(RNG.standard_normal((1000, 60)))
    ny = Nystroem(n_components=512, kernel="rbf", seed=0).fit(rows)    # 2.3 MB of fitted arrays
    sizes = {}
    real = fz.run_tasks

    def spy(tasks, progress=True):
        graph = {}
        for t in tasks:
            graph.update(dict(t.__dask_graph__()))
        sizes[len(graph)] = _task_bytes(graph)
        return real(tasks, progress)

    monkeypatch.setattr(fz, "run_tasks", spy)
    for n_blocks in (10, 100):
        src = from_sparse(sp.csr_matrix(rows), block_rows=1000 // n_blocks) if sparse else \
            da.from_array(rows, chunks=(1000 // n_blocks, -1))
        featurize(src, ny, store=str(tmp_path / f"{n_blocks}.zarr"), progress=False)
    small, big = sorted(sizes.values())
    assert (big - small) / 90 < 0.01 * (ny.landmarks_.nbytes + ny.normalization_.nbytes)   # per extra block


# -- fitted arrays beside the spec -------------------------------------------------------------------
def test_spec_is_small_json_and_from_spec_needs_and_verifies_the_arrays():
    ny = Nystroem(n_components=50, kernel="gmm", seed=1).fit(XS)
    text = ny.spec_json()
    assert len(text) < 1500 and "sha256" in text
    with pytest.raises(SidecarError, match="arrays="):
        from_spec(text)
    arrays = ny.sidecar_arrays()
    again = from_spec(text, arrays=arrays)
    assert np.array_equal(again.transform(XS), ny.transform(XS))
    bad = dict(arrays, normalization=arrays["normalization"].copy())
    bad["normalization"][3, 3] += 1e-12
    with pytest.raises(SidecarError, match="sha256"):
        from_spec(text, arrays=bad)
    with pytest.raises(SidecarError, match="landmarks"):
        from_spec(text, arrays={k: v for k, v in arrays.items() if k != "landmarks"})


def test_tampered_or_malformed_npz_sidecar_is_refused(tmp_path):
    ny = Nystroem(n_components=16, kernel="rbf", seed=1).fit(XS)
    path = save_map(ny, str(tmp_path / "ny.json"))
    npz = str(tmp_path / "ny.npz")
    assert np.array_equal(load_map(path).transform(XS), ny.transform(XS))
    arrays = dict(np.load(npz))

    arrays["landmarks"] = arrays["landmarks"].copy()
    arrays["landmarks"][0, 0] = np.nextafter(arrays["landmarks"][0, 0], 2.0)   # one ulp
    np.savez(npz, **arrays)
    with pytest.raises(SidecarError, match="sha256"):
        load_map(path)

    # a pickled (object) member is refused from its header, before anything is unpickled
    arrays = ny.sidecar_arrays()
    np.savez(npz, **dict(arrays, landmark_rows=np.array([object()] * 16, dtype=object)))
    with pytest.raises(SidecarError, match="landmark_rows"):
        load_map(path)

    # a manifest declaring a huge array is refused before allocating (the spec's own fields)
    save_map(ny, path)
    spec = json.load(open(path))
    spec["state"]["sidecar"]["arrays"]["landmarks"]["shape"] = [10**9, 10**6]
    json.dump(spec, open(path, "w"))
    with pytest.raises(SidecarError, match="expected shape"):
        load_map(path)

    # an extra member, or a member whose data is cut short
    save_map(ny, path)
    np.savez(npz, **dict(arrays, extra=np.zeros(1)))
    with pytest.raises(SidecarError, match="extra"):
        load_map(path)
    np.savez(npz, **arrays)
    with zipfile.ZipFile(npz) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["normalization.npy"] = members["normalization.npy"][:-8]
    with zipfile.ZipFile(npz, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    with pytest.raises(SidecarError, match="data bytes"):
        load_map(path)


def test_store_and_saved_model_keep_and_verify_the_arrays(tmp_path):
    import zarr

    ny = Nystroem(n_components=16, kernel="cosine_rbf", seed=2).fit(XS)
    store = featurize(XS, ny, store=str(tmp_path / "s.zarr"), block_rows=100, progress=False)
    assert np.array_equal(open_store(store.path).feature_map.transform(XS), ny.transform(XS))
    y = (XS[:, 0] > 0).astype(int)
    model = KernelModel(ny, SGDClassifier(random_state=0).fit(ny.transform(XS), y))
    path = model.save(str(tmp_path / "m.dk"))
    assert np.array_equal(load_model(path).predict(XS), model.predict(XS))

    g = zarr.open_group(store.path, mode="r+")
    g["fitted/normalization"][0, 0] = 7.0
    with pytest.raises(SidecarError, match="sha256"):
        open_store(store.path).feature_map
    arrays = dict(np.load(os.path.join(path, "feature_map.npz")))
    arrays["normalization"][1, 1] += 1.0
    np.savez(os.path.join(path, "feature_map.npz"), **arrays)
    with pytest.raises(ValueError, match=r"m\.dk/feature_map\.npz: the arrays' sha256 does not match"):
        load_model(path)  # the model loader names the model file and the sidecar


def test_fit_incremental_on_a_nystroem_store(tmp_path):
    from dask_kernels import fit_incremental

    y = (XS[:, 0] ** 2 + XS[:, 1] ** 2 > 1.4).astype(int)      # a disc: not linearly separable
    ny = Nystroem(n_components=64, kernel="rbf", gamma=0.1, seed=0).fit(XS)
    store = featurize(XS, ny, labels=y, store=str(tmp_path / "s.zarr"), block_rows=100, progress=False)
    model = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), store, epochs=20, validation_fraction=None,
                            progress=False)
    assert model.feature_map.spec() == ny.spec()
    linear = SGDClassifier(loss="log_loss", random_state=0).fit(XS, y).score(XS, y)
    assert linear < 0.7 and model.score(XS, y) > 0.85


def test_fit_incremental_fits_an_unfitted_nystroem_on_all_rows():
    from dask_kernels import fit_incremental

    y = (XS[:, 0] > 0).astype(int)
    ny = Nystroem(n_components=16, kernel="gmm", seed=2)
    model = fit_incremental(SGDClassifier(random_state=0), XS, y, feature_map=ny, block_rows=50, epochs=1,
                            validation_fraction=None, progress=False)
    assert model.feature_map.spec() == Nystroem(n_components=16, kernel="gmm", seed=2).fit(XS).spec()


def test_cli_featurizes_with_nystroem_gmm(tmp_path, capsys):
    from dask_kernels.cli import main

    np.save(tmp_path / "x.npy", XS)
    out = str(tmp_path / "out.zarr")
    assert main(["featurize", str(tmp_path / "x.npy"), out, "--method", "nystroem", "--param", "kernel=gmm",
                 "--param", "n_components=16", "--workers", "1", "--block-rows", "100", "--no-progress"]) == 0
    store = open_store(out)
    ref = Nystroem(n_components=16, kernel="gmm").fit(XS)
    assert store.spec == ref.spec() and np.array_equal(np.asarray(store.features), ref.transform(XS))


# -- parameters and input ------------------------------------------------------------------------------
def test_bad_parameters_and_input_are_refused():
    with pytest.raises(ValueError, match="gamma must be None"):
        Nystroem(kernel="gmm", gamma=1.0).fit(X)
    with pytest.raises(ValueError):
        Nystroem(kernel="poly").fit(X)
    with pytest.raises(ValueError, match="row 5 has a negative"):
        Nystroem(kernel="minmax").fit(np.where(np.arange(300)[:, None] == 5, -1.0, X))
    bad = XS.copy()
    bad[137, 2] = np.nan
    with pytest.raises(ValueError, match="row 137"):
        Nystroem(n_components=8).fit(da.from_array(bad, chunks=50))
    with pytest.raises(ValueError, match=r"rows \d+\.\.\d+ are complex"):
        Nystroem(n_components=8).fit(da.from_array(XS + 0j, chunks=50))
    ny = Nystroem(n_components=8).fit(XS)
    spec = ny.spec()
    spec["state"]["n_landmarks"] = 9        # more landmarks than n_components
    with pytest.raises(ValueError, match="n_landmarks"):
        from_spec(spec, arrays=ny.sidecar_arrays())


def test_fewer_rows_than_components_and_duplicates():
    A = np.repeat(XS[:5], 3, axis=0)             # 15 rows, 5 distinct
    ny = Nystroem(n_components=40, kernel="rbf", seed=0, dtype="float64").fit(A)
    assert ny.n_output_features_ == 15 and ny.rank_ == 5     # duplicates fall below the floor
    Z = ny.transform(A)
    assert np.abs(Z @ Z.T - rbf_kernel(A, A, gamma=ny.gamma_)).max() < 1e-9
    assert pickle.loads(pickle.dumps(ny)).spec() == ny.spec()


def test_dask_scheduler_default_is_used_for_the_fit():
    # the sampling pass is a dask graph: with the synchronous scheduler it gives the same fit
    with dask.config.set(scheduler="sync"):
        a = Nystroem(n_components=12, seed=3).fit(da.from_array(XS, chunks=37))
    assert a.spec() == Nystroem(n_components=12, seed=3).fit(XS).spec()


def test_minmax_refuses_negative_rows_in_the_pipeline_and_the_learner():
    # fitted on nonnegative rows, a min-max map must not silently compute GMM on negative ones
    ny = Nystroem(n_components=8, kernel="minmax").fit(X)
    bad = X.copy()
    bad[211, 3] = -0.5
    with pytest.raises(ValueError, match="row 211 has a negative"):
        featurize(da.from_array(bad, chunks=100), ny).compute()
    with pytest.raises(ValueError, match="row 211 has a negative"):
        ny.validate_block(bad[200:], row_offset=200)
    with pytest.raises(ValueError, match="row 211 has a negative"):
        ny.validate_block(bad[[0, 211]], row_numbers=np.array([0, 211]))
