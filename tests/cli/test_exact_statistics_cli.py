"""The command line's statistics over all rows: ``center=mean`` and ``gamma=scale`` are the same
bits for any block size (exact sums), and equal the in-memory fit."""

from fractions import Fraction

import numpy as np
import pytest

from dask_kernels import RFF, open_store
from dask_kernels.cli import main

#: a column whose float sum depends on the order: 1e16 + 1 rounds the 1 away
X = np.array([[1e16, 1.0], [1.0, 2.0], [-1e16, 3.0], [1.0, 4.0]] * 50 + [[3.0, 0.5]] * 3)


@pytest.fixture(scope="module")
def cluster(local_cluster):
    return local_cluster  # the session's shared LocalCluster (tests/conftest.py)


def _featurize(tmp_path, name, rows, cluster, *params, method="gcws"):
    argv = ["featurize", str(tmp_path / "X.npy"), str(tmp_path / name), "--block-rows", str(rows),
            "--method", method, "--scheduler", cluster, "--no-progress"]
    for p in params:
        argv += ["--param", p]
    assert main(argv) == 0
    return open_store(str(tmp_path / name)).feature_map


def test_center_mean_is_exact_and_the_same_for_any_block_size(tmp_path, cluster):
    np.save(tmp_path / "X.npy", X)
    exact = [float(sum((Fraction(v) for v in X[:, j]), Fraction(0)) / X.shape[0]) for j in range(2)]
    # the float sums of these blocks differ, so a float mean would depend on the block size
    assert len({float(sum(b[:, 0].sum() for b in np.array_split(X, range(r, X.shape[0], r)))) for r in (4, 7)}) > 1
    centers = [_featurize(tmp_path, f"c{rows}.zarr", rows, cluster, "center=mean", "n_components=8").center_
               for rows in (4, 7, 203)]
    for c in centers:
        assert c.tolist() == exact


def test_gamma_scale_passes_through_and_is_the_same_for_any_block_size(tmp_path, cluster):
    Y = np.random.default_rng(1).standard_normal((300, 5)) * [1.0, 1e6, 1e-3, 5.0, 1.0] + 1e7
    np.save(tmp_path / "X.npy", Y)
    specs = [_featurize(tmp_path, f"g{rows}.zarr", rows, cluster, "gamma=scale", "n_components=8",
                         method="rff").spec_json()
             for rows in (7, 100)]
    assert specs[0] == specs[1] == RFF(n_components=8, gamma="scale").fit(Y).spec_json()


@pytest.mark.parametrize("method", ["rff", "nystroem"])
def test_input_scale_on_a_cluster_is_the_same_for_any_block_size_and_features_match(tmp_path, cluster, method):
    Y = np.random.default_rng(2).standard_normal((300, 5)) * [1.0, 1e6, 1e-3, 5.0, 1.0] + 1e7
    np.save(tmp_path / "X.npy", Y)
    gamma = ["gamma=scale"] if method == "rff" else []
    maps = [_featurize(tmp_path, f"s{rows}.zarr", rows, cluster, "scale=auto", "n_components=8", *gamma,
                       method=method) for rows in (7, 100)]
    assert maps[0].spec_json() == maps[1].spec_json()
    assert maps[0].scale_ == {"rule": "minmax", "min": Y.min(0).tolist(), "max": Y.max(0).tolist()}
    # the stored features (written by the cluster's workers, each scaling its own blocks) are the map's
    stored = open_store(str(tmp_path / "s7.zarr")).features.compute()
    np.testing.assert_allclose(stored, maps[0].transform(Y), rtol=0, atol=1e-5)
