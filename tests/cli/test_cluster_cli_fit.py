"""The featurize command on its own LocalCluster fits an unfitted map on the first block read in
its own process (``cli.featurize.fit_here``), the map featurize would fit, without a task."""

import numpy as np
import pytest

from dask_kernels import GCWS, Nystroem
from dask_kernels.cli.featurize import fit_here
from dask_kernels.io import read_npy
from dask_kernels.maps.base import ensure_fitted

distributed = pytest.importorskip("distributed")


@pytest.fixture
def npy(tmp_path):
    X = np.random.default_rng(3).standard_normal((300, 6))
    X[:100] = 0.0  # an all-zero first block still has rows: it is the one fitted on
    path = str(tmp_path / "x.npy")
    np.save(path, X)
    return path


def test_fit_here_needs_no_worker_and_fits_what_featurize_fits(npy):
    X = read_npy(npy, block_rows=100)
    ref = ensure_fitted(GCWS(n_components=16, seed=5, scale=None), lambda: np.load(npy)[:100])
    # a scheduler without workers: a task (the first block computed on the cluster) would never run
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        unfitted = GCWS(n_components=16, seed=5, scale=None)  # fitted on the first block
        fitted = fit_here(unfitted, X, None)
        assert fitted.spec() == ref.spec()
        assert not hasattr(unfitted, "n_features_in_")  # a clone is fitted, as featurize does
        assert fit_here(fitted, X, None) is fitted  # a fitted map is kept as it is
        # a map fitted on all the rows is left to featurize (and its cluster)
        nys = Nystroem(n_components=4)
        assert fit_here(nys, X, None) is nys
        scaled = GCWS(n_components=16)  # its scale is learned from all rows
        assert fit_here(scaled, X, None) is scaled


def test_fit_here_leaves_inputs_other_than_dask_arrays_to_featurize(npy):
    rows = np.load(npy)
    unfitted = GCWS(n_components=16)
    assert fit_here(unfitted, rows, None) is unfitted
