"""``featurize --append`` of rows the store already holds, under another identity (the file
rewritten with the same bytes, or touched: a new modification time), resumes that part instead
of appending the rows twice. Before, every such re-run added a segment of the same rows."""

import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_kernels import open_store
from dask_kernels.cli import main

RNG = np.random.default_rng(11)
DAYS = [np.abs(RNG.standard_normal((300, 4))) for _ in range(2)]  # two days of the same shape


def _touch(path):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


@pytest.mark.parametrize("suffix", [".npy", ".svm"])
def test_the_same_rows_touched_or_rewritten_are_not_appended_twice(tmp_path, capsys, suffix):
    day, store = str(tmp_path / f"day{suffix}"), str(tmp_path / "s.zarr")

    def write(X):
        if suffix == ".npy":
            np.save(day, X)
        else:
            dump_svmlight_file(X, (X[:, 0] > 0.5).astype(int), day, zero_based=False)

    def append():
        assert main(["featurize", day, store, "--append", "--block-rows", "100", "--no-progress"]) == 0
        return capsys.readouterr().out

    write(DAYS[0])
    assert "3 computed" in append()
    for again in (lambda: _touch(day), lambda: write(DAYS[0])):  # cron re-ran the export, then the job
        again()
        assert "0 computed" in append() and open_store(store).n_rows == 300
    write(DAYS[1])  # the next day: its rows are appended
    assert "3 computed" in append() and open_store(store).n_rows == 600
    _touch(day)
    assert "0 computed" in append() and open_store(store).n_rows == 600
    write(DAYS[0])  # and the first day's rows again, rewritten: still no third segment
    assert "0 computed" in append() and open_store(store).n_rows == 600
    assert main(["info", store, "--verify"]) == 0  # every block still matches its record
