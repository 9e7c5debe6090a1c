"""Appending at the command line takes the store's map: its spec, including the fitted
``center=mean`` of the first segment; only an explicit parameter that conflicts is refused."""

import numpy as np
import pytest

from dask_kernels import GCWS, open_store
from dask_kernels.cli import main


@pytest.fixture(scope="module")
def cluster(local_cluster):
    return local_cluster


def _days(tmp_path):
    rng = np.random.default_rng(5)
    days = []
    for d, shift in enumerate((0.0, 3.0, 7.0)):  # each day's mean differs from the first's
        X = np.abs(rng.standard_normal((90, 4))) + shift
        np.save(tmp_path / f"x{d}.npy", X)
        np.save(tmp_path / f"y{d}.npy", (X[:, 0] > X[:, 1]).astype(np.int64))
        days.append(X)
    return days


def _featurize(tmp_path, day, cluster, *extra):
    return main(["featurize", str(tmp_path / f"x{day}.npy"), str(tmp_path / "f.zarr"), "--labels",
                 str(tmp_path / f"y{day}.npy"), "--append", "--scheduler", cluster, "--no-progress", *extra])


def test_append_keeps_the_first_segments_mean(tmp_path, cluster):
    days = _days(tmp_path)
    params = ["--param", "center=mean", "--param", "n_components=16", "--param", "seed=3"]
    assert _featurize(tmp_path, 0, cluster, *params) == 0  # creates the store: the mean of day 0
    assert _featurize(tmp_path, 1, cluster, *params) == 0  # the same command line the next night
    assert _featurize(tmp_path, 2, cluster) == 0           # no map flags at all: the store's map
    s = open_store(str(tmp_path / "f.zarr"))
    assert len(s.segments) == 2 and s.n_rows == 270
    np.testing.assert_allclose(s.feature_map.center_, days[0].mean(axis=0), rtol=1e-15)
    want = GCWS(n_components=16, seed=3, center=days[0].mean(axis=0).tolist()).fit(days[0][:1])
    assert np.array_equal(s.features.compute(), want.transform(np.concatenate(days)))
    assert s.verify_blocks() == {}


def test_append_refuses_a_conflicting_explicit_parameter(tmp_path, cluster, capsys):
    _days(tmp_path)
    assert _featurize(tmp_path, 0, cluster, "--param", "center=mean", "--param", "n_components=16") == 0
    capsys.readouterr()
    for extra, name in ((["--param", "n_components=32"], "n_components"), (["--method", "nrff"], "method"),
                        (["--param", "center=null"], "center")):
        try:
            rc = _featurize(tmp_path, 1, cluster, *extra)
        except SystemExit as e:
            rc = e.code
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
        assert name in lines[0] and "f.zarr" in lines[0] and "append" in lines[0]
    s = open_store(str(tmp_path / "f.zarr"))
    assert s.segments == [] and s.n_rows == 90
