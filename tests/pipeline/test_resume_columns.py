"""A re-run whose labels changed while the rows did not (a labels file fixed or refreshed, a label
column corrected in a CSV or svmlight file) rewrites the blocks whose labels changed: before, it
kept every finished block, labels and all ("0 computed"), a store silently holding the old labels."""

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_kernels import GCWS, featurize, open_store
from dask_kernels.cli import main
from dask_kernels.io import read_npy

RNG = np.random.default_rng(7)
X = np.abs(RNG.standard_normal((400, 5)))
G = GCWS(n_components=8, seed=1).fit(X[:1])


def _labels():
    y = (X[:, 0] > 0.5).astype(np.int64)
    changed = y.copy()
    changed[250] = 1 - changed[250]  # block 2 of 100 rows
    return y, changed


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("given", ["file", "array"])
def test_labels_given_beside_the_rows(tmp_path, given, overwrite):
    np.save(tmp_path / "X.npy", X)
    y, changed = _labels()
    store = str(tmp_path / "s.zarr")

    def run(labels):
        if given == "file":
            np.save(tmp_path / "y.npy", labels)
            labels = np.load(tmp_path / "y.npy", mmap_mode="r")
        return featurize(read_npy(str(tmp_path / "X.npy"), block_rows=100), G, labels=labels, store=store,
                         block_rows=100, progress=False, overwrite=overwrite)

    assert run(y).run_stats["computed"] == 4
    s = run(changed)
    assert s.run_stats["computed"] == 1 and np.array_equal(np.asarray(open_store(store).labels), changed)
    assert run(changed).run_stats["computed"] == 0  # nothing changed since: nothing rewritten


def test_a_label_column_corrected_in_a_csv(tmp_path, capsys):
    names = np.array(["bus", "van"])[(X[:, 0] > 0.5).astype(int)]

    def write(labels):
        with open(tmp_path / "t.csv", "w") as f:
            f.write("a,b,c,d,e,y\n")
            for row, label in zip(X, labels):
                f.write(",".join(repr(float(v)) for v in row) + f",{label}\n")

    write(names)
    argv = ["featurize", str(tmp_path / "t.csv"), str(tmp_path / "s.zarr"), "--label-column", "y",
            "--block-rows", "100", "--no-progress"]
    assert main(argv) == 0
    fixed = names.copy()
    fixed[0] = "van" if fixed[0] == "bus" else "bus"
    write(fixed)
    assert main(argv) == 0
    assert "1 computed, 3 already done" in capsys.readouterr().out
    s = open_store(str(tmp_path / "s.zarr"))
    assert np.array_equal(np.asarray(s.labels), fixed)


def test_a_label_corrected_in_an_svmlight_file(tmp_path, capsys):
    y, changed = _labels()
    path = str(tmp_path / "d.svm")
    argv = ["featurize", path, str(tmp_path / "s.zarr"), "--block-rows", "100", "--no-progress"]
    dump_svmlight_file(X, y, path, zero_based=False)
    assert main(argv) == 0
    dump_svmlight_file(X, changed, path, zero_based=False)
    assert main(argv) == 0
    assert "1 computed, 3 already done" in capsys.readouterr().out
    assert np.array_equal(np.asarray(open_store(str(tmp_path / "s.zarr")).labels), changed)
