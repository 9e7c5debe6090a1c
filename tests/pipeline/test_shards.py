"""Sharded feature stores: k blocks per Zarr v3 shard, one writer per shard, reading unchanged."""

import os

import dask.array as da
import numpy as np
import pytest
import zarr

from dask_kernels import GCWS, featurize, fit_incremental, open_store
from dask_kernels.io import read_svmlight
from dask_kernels.pipeline.featurize import shard_blocks
from dask_kernels.pipeline.store import StoreIntegrityError

RNG = np.random.default_rng(8)
X = np.abs(RNG.standard_normal((400, 12)))
Y = (X[:, 0] > np.median(X[:, 0])).astype(np.int64)
G = GCWS(n_components=24, seed=3).fit(X[:1])
REF = G.transform(X)


def _objects(path, array):
    root = os.path.join(path, array, "c")
    return sum(len(files) for _, _, files in os.walk(root))


def test_object_count_drops_by_the_shard_factor_and_reads_are_unchanged(tmp_path):
    plain = featurize(da.from_array(X, chunks=(10, 12)), G, labels=Y, store=str(tmp_path / "p.zarr"), shards=None,
                      progress=False)
    sharded = featurize(da.from_array(X, chunks=(10, 12)), G, labels=Y, store=str(tmp_path / "s.zarr"), shards=8,
                        progress=False)
    assert plain.n_blocks == sharded.n_blocks == 40
    for name in ("features", "labels", "done"):
        assert _objects(plain.path, name) == 40 and _objects(sharded.path, name) == 5  # 40 / 8
    assert sharded.format == 3 and sharded.info["shard_blocks"] == 8 and plain.format == 2
    g = zarr.open_group(sharded.path, mode="r")
    assert g["features"].shards == (80, 24) and g["features"].chunks == (10, 24)
    s = open_store(sharded.path)
    assert s.features.chunks == plain.features.chunks  # blocks as before
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    assert sharded.run_stats == {"computed": 40, "skipped": 0}
    assert s.done.all() and s.verify_blocks() == {}
    # training is unchanged: the same model from either layout
    from sklearn.linear_model import SGDClassifier

    a = fit_incremental(SGDClassifier(random_state=0), open_store(plain.path), epochs=2, progress=False)
    b = fit_incremental(SGDClassifier(random_state=0), s, epochs=2, progress=False)
    assert np.array_equal(a.estimator.coef_, b.estimator.coef_)


def test_damaged_shard_is_found_per_block_and_rewritten_whole(tmp_path):
    p = str(tmp_path / "s.zarr")
    featurize(da.from_array(X, chunks=(10, 12)), G, store=p, shards=8, progress=False)
    shard = os.path.join(p, "features", "c", "2", "0")  # blocks 16..23
    raw = bytearray(open(shard, "rb").read())
    raw[20] ^= 0xFF  # inside the first inner chunk (block 16); the index sits at the end
    open(shard, "wb").write(bytes(raw))
    bad = open_store(p).verify_blocks()
    assert list(bad) == [16] and "block 16" in bad[16]
    with pytest.raises(StoreIntegrityError, match="block 16"):
        open_store(p).features.compute()
    again = featurize(da.from_array(X, chunks=(10, 12)), G, store=p, shards=8, progress=False)
    assert again.run_stats == {"computed": 8, "skipped": 32}  # the one shard, written whole
    assert np.array_equal(open_store(p).features.compute(), REF) and open_store(p).verify_blocks() == {}


def test_sharded_store_from_sparse_partitions_and_resumed_layout(tmp_path):
    f = tmp_path / "d.svm"
    f.write_text("".join(f"{Y[i]} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(r)) + "\n"
                         for i, r in enumerate(X)))
    src = read_svmlight(str(f), n_features=12, blocksize=4000)
    assert src.n_partitions > 3
    s = featurize(src, G, store=str(tmp_path / "s.zarr"), block_rows=25, shards=4, progress=False)
    assert s.n_blocks == 16 and _objects(s.path, "features") == 4 and _objects(s.path, "qid") == 0
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    # a resumed store keeps its own layout whatever the argument says
    again = featurize(src, G, store=s.path, block_rows=25, shards=None, progress=False)
    assert again.run_stats["computed"] == 0 and again.info["shard_blocks"] == 4


def test_auto_shards_large_stores_only(tmp_path):
    assert shard_blocks("auto", 1024, 10**6) == 1
    assert shard_blocks("auto", 1025, 10**6) == 64  # 64 MB shards
    assert shard_blocks("auto", 10**6, 100 * 2**20) == 2  # shards stay near 256 MiB
    assert shard_blocks(None, 10**6, 1) == 1
    with pytest.raises(ValueError, match="shards must be"):
        shard_blocks(0, 10, 10)
    s = featurize(da.from_array(X[:, :4][np.arange(2100) % 400], chunks=(2, 4)), GCWS(n_components=4).fit(X[:1, :4]),
                  store=str(tmp_path / "a.zarr"), progress=False)
    assert s.n_blocks == 1050 and s.info["shard_blocks"] == 64 and _objects(s.path, "features") == 17


def _task_names(run):
    """Names (key prefixes) of the tasks ``run()`` executes on the local scheduler, with counts."""
    from collections import Counter

    from dask.callbacks import Callback

    seen = Counter()

    class Names(Callback):
        def _pretask(self, key, dsk, state):
            seen[(key[0] if isinstance(key, tuple) else key).rsplit("-", 1)[0]] += 1

    with Names():
        run()
    return seen


def _files(path, array):
    root = os.path.join(path, array, "c")
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root) for f in files}


def test_shard_blocks_are_featurized_one_task_per_block_and_written_once_per_shard(tmp_path):
    """A shard's blocks are featurized by one task each (the workers' tasks stay as fine as an
    unsharded store's, and the shard's rows are never copied into one chunk) and written by one
    task per shard; the stored bytes are what Zarr writes for the same arrays, codecs and shards."""
    from dask_kernels.pipeline.creation import _codecs

    p = str(tmp_path / "s.zarr")
    Xd = da.from_array(X, chunks=(10, 12))
    names = _task_names(lambda: featurize(Xd, G, store=str(tmp_path / "n.zarr"), shards=8, progress=False))
    featurized = sum(n for k, n in names.items() if k.startswith("dk-featurize"))
    writes = sum(n for k, n in names.items() if k.startswith("dk-write"))
    assert featurized == 40 and writes == 5, names  # 40 blocks, 5 shards of 8
    assert not any(k.startswith(("rechunk", "concatenate")) for k in names), names  # no copy of the rows
    featurize(Xd, G, labels=Y, store=p, shards=8, progress=False)
    ref = zarr.open_group(str(tmp_path / "ref.zarr"), mode="w")
    for name, values in (("features", REF), ("labels", Y)):
        a = ref.create_array(name, shape=values.shape, chunks=(10,) + values.shape[1:], dtype=values.dtype,
                             shards=(80,) + values.shape[1:], compressors=_codecs("auto", True), fill_value=0)
        a[:] = values
        assert _files(p, name) == _files(ref.store.root / name, "") != {}


def test_sharded_store_on_worker_processes_matches_the_unsharded_one(tmp_path, local_cluster):
    """On worker processes a shard's blocks, featurized on either worker, reach its one writer."""
    from distributed import Client

    with Client(local_cluster):
        s = featurize(da.from_array(X, chunks=(25, 12)), G, labels=Y, store=str(tmp_path / "s.zarr"), shards=4,
                      progress=False)
    assert s.run_stats == {"computed": 16, "skipped": 0} and _objects(s.path, "features") == 4
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    assert open_store(s.path).verify_blocks() == {}


def test_changed_input_row_rewrites_only_its_shard_whole(tmp_path):
    """Resuming on a changed input keeps the whole-shard task: the shard holding the changed
    block is recomputed and rewritten whole, the other shards are kept byte for byte."""
    from dask_kernels.io import read_npy

    f = str(tmp_path / "x.npy")
    np.save(f, X)
    p = str(tmp_path / "s.zarr")
    featurize(read_npy(f, block_rows=10), G, store=p, shards=8, progress=False)
    before = _files(p, "features")
    X2 = X.copy()
    X2[205] += 1.0  # block 20: shard 2 (blocks 16..23)
    np.save(f, X2)
    s = featurize(read_npy(f, block_rows=10), G, store=p, shards=8, progress=False)
    assert s.run_stats == {"computed": 8, "skipped": 32}
    after = _files(p, "features")
    assert {k for k in before if before[k] != after[k]} == {os.path.join("2", "0")}
    assert np.array_equal(open_store(p).features.compute(), G.transform(X2))
