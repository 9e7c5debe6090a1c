"""The store's integrity checks are switched by the dask config key ``dask_kernels.integrity``
(documented in the training guide's Configuration), not by a module global: off, a run writes
the same features without chunk checksums."""

import json
import os

import dask
import numpy as np

import dask_kernels as dk


def _codecs(store):
    with open(os.path.join(store, "features", "zarr.json")) as f:
        return [c["name"] for c in json.load(f)["codecs"]]


def test_the_integrity_key_turns_the_checksums_off_and_changes_no_feature(tmp_path):
    X = np.random.default_rng(0).random((100, 5))
    gcws = dk.GCWS(n_components=8).fit(X)
    checked = dk.featurize(X, gcws, store=str(tmp_path / "a.zarr"), progress=False)
    with dask.config.set({"dask_kernels.integrity": False}):
        unchecked = dk.featurize(X, gcws, store=str(tmp_path / "b.zarr"), progress=False)
    assert "crc32c" in _codecs(tmp_path / "a.zarr") and "crc32c" not in _codecs(tmp_path / "b.zarr")
    assert (checked.features.compute() == unchecked.features.compute()).all()
