"""Codecs of new stores: float features raw (fast to read), codes and labels compressed; stores
written with Zstandard floats still read and train as before."""

import os

import dask.array as da
import numpy as np
import zarr
from zarr.codecs import ZstdCodec

import dask_kernels
from dask_kernels import GCWS, NRFF, SoftmaxSGD, fit_incremental


def _data(n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int64)


def _codec_names(path, name):
    return [type(c).__name__ for c in zarr.open_group(path, mode="r")[name].metadata.codecs]


def _store(tmp_path, fmap, name, **kw):
    X, y = _data()
    path = os.path.join(tmp_path, name)
    dask_kernels.featurize(da.from_array(X, chunks=(200, -1)), fmap.fit(X), labels=y, store=path, progress=False,
                           **kw)
    return path


def test_float_features_are_stored_raw_and_codes_and_labels_compressed(tmp_path):
    nrff = _store(tmp_path, NRFF(n_components=16, gamma=0.5, seed=0), "nrff.zarr")
    gcws = _store(tmp_path, GCWS(n_components=16, seed=0), "gcws.zarr")
    assert _codec_names(nrff, "features") == ["BytesCodec", "Crc32cCodec"]  # checksummed, not compressed
    assert _codec_names(nrff, "labels") == ["BytesCodec", "ZstdCodec", "Crc32cCodec"]
    assert _codec_names(gcws, "features") == ["BytesCodec", "ZstdCodec", "Crc32cCodec"]


def test_a_float_store_written_with_zstandard_reads_and_trains_as_a_raw_one(tmp_path):
    raw = _store(tmp_path, NRFF(n_components=16, gamma=0.5, seed=0), "raw.zarr")
    old = _store(tmp_path, NRFF(n_components=16, gamma=0.5, seed=0), "old.zarr",
                 compressors=ZstdCodec(level=0, checksum=False))  # what "auto" wrote for floats before
    assert _codec_names(old, "features") == ["BytesCodec", "ZstdCodec", "Crc32cCodec"]
    a, b = dask_kernels.open_store(raw), dask_kernels.open_store(old)
    np.testing.assert_array_equal(a.read_block(1)["features"], b.read_block(1)["features"])
    fit = lambda s: fit_incremental(SoftmaxSGD(eta0=0.1, random_state=0), s, epochs=1,  # noqa: E731
                                    validation_fraction=None, progress=False).estimator
    np.testing.assert_array_equal(fit(a).coef_, fit(b).coef_)
