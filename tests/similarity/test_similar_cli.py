"""``dask-kernels similar``: argument errors as one line, before any cluster starts."""

import numpy as np

import dask_kernels.maps.base  # noqa: F401
from dask_kernels import GCWS, featurize

from _cli import one_line_error


def _store(tmp_path):
    X = np.random.default_rng(0).random((30, 5))
    return featurize(X, GCWS(n_components=16, bits=8), store=str(tmp_path / "s.zarr"), progress=False).path


def test_errors_name_the_flag(tmp_path, capsys):
    store = _store(tmp_path)
    line = one_line_error(capsys, ["similar", str(tmp_path / "nope.zarr"), "--threshold", "0.8", "-o", "p.parquet"])
    assert "store" in line and "no such file" in line
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--bands", "4", "-o", "p.parquet"])
    assert "--bands and --rows" in line
    (tmp_path / "p.parquet").mkdir()
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "-o", str(tmp_path / "p.parquet")])
    assert "already exists" in line
    line = one_line_error(capsys, ["similar", store, "--threshold", "0", "-o", str(tmp_path / "q.parquet")])
    assert "--threshold" in line
