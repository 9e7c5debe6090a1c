"""``dask-kernels score`` reduces each partition to a few numbers on the workers: the client
receives the same small tuple whatever the row count (it used to gather every prediction and
label), and the score equals scikit-learn's on the gathered arrays."""

import pickle

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, r2_score

from dask_kernels import load_model
from dask_kernels.cli import main, score


def _computed_sizes(monkeypatch):
    """Pickled sizes of everything ``dask.compute`` returns to the client from here on."""
    sizes, compute = [], dask.compute

    def recording(*args, **kwargs):
        out = compute(*args, **kwargs)
        sizes.append(len(pickle.dumps(out)))
        return out

    monkeypatch.setattr(dask, "compute", recording)
    return sizes


def _rows(d, n, rng):
    X = rng.random((n, 6))
    np.save(d / f"X{n}.npy", X)
    np.save(d / f"y{n}.npy", (X[:, 0] + X[:, 1] > 1).astype(np.int64))
    return X


def test_what_the_client_receives_does_not_grow_with_the_rows(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    X = _rows(tmp_path, 500, rng)
    _rows(tmp_path, 20000, rng)
    assert main(["train", str(tmp_path / "X500.npy"), "--labels", str(tmp_path / "y500.npy"), "--method", "gcws",
                 "--param", "n_components=16", "--epochs", "1", "-o", str(tmp_path / "m.dk")]) == 0
    capsys.readouterr()
    sizes = _computed_sizes(monkeypatch)
    for n in (500, 20000):
        assert main(["score", str(tmp_path / "m.dk"), str(tmp_path / f"X{n}.npy"), "--labels",
                     str(tmp_path / f"y{n}.npy")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(sizes) == 2 and sizes[0] == sizes[1] and sizes[1] < 512, sizes  # 20000 labels alone: 160 kB
    # the figure scikit-learn gives on the gathered arrays (what the command computed before)
    expect = accuracy_score(np.load(tmp_path / "y500.npy"), load_model(str(tmp_path / "m.dk")).predict(X))
    assert out[0] == f"{tmp_path / 'X500.npy'}: 500 rows, accuracy {expect:.6f}"


@pytest.mark.parametrize("label_chunks", [(100, 250, 50, 600), (1000,)])
def test_accuracy_of_blocks_equals_sklearn_whatever_the_label_chunks(label_chunks):
    rng = np.random.default_rng(1)
    y, pred = rng.integers(0, 3, 1000), rng.integers(0, 3, 1000)
    names = np.array(["cat", "dog", "eel"])
    for yy, pp in ((y, pred), (names[y], names[pred])):
        p = da.from_array(pp, chunks=((300, 0, 700),))  # an empty partition too
        stats = dask.compute(score.score_stats(p, da.from_array(yy, chunks=(label_chunks,)), False))[0]
        assert stats == (1000, int((yy == pp).sum()))
        assert stats[1] / stats[0] == accuracy_score(yy, pp)


def test_r2_of_blocks_equals_sklearn_for_labels_far_from_zero(tmp_path):
    """Means and squared deviations merged exactly: labels of mean 1e6 and spread 1 (a sum of
    squares minus n mean^2 would lose most digits in float64)."""
    rng = np.random.default_rng(2)
    y = 1e6 + rng.standard_normal(5000)
    pred = y + 0.3 * rng.standard_normal(5000)
    np.save(tmp_path / "y.npy", y)
    mapped = np.load(tmp_path / "y.npy", mmap_mode="r")  # --labels: read by each task from the file
    p = da.from_array(pred, chunks=((7, 993, 0, 2000, 1000, 1000),))
    for labels in (mapped, da.from_array(y, chunks=3000)):
        stats = dask.compute(score.score_stats(p, labels, True))[0]
        assert stats[0] == 5000
        assert score.r2_of(stats) == pytest.approx(r2_score(y, pred), rel=1e-9)


def test_r2_edge_cases_follow_sklearn():
    cases = (([2.0, 2.0, 2.0], [2.0, 2.0, 2.0]), ([2.0, 2.0, 2.0], [1.0, 2.0, 2.0]), ([1.0, 2.0], [2.0, 1.0]))
    for y, pred in cases:
        stats = dask.compute(score.score_stats(da.from_array(np.array(pred), chunks=1), np.array(y), True))[0]
        assert score.r2_of(stats) == r2_score(y, pred)
    assert np.isnan(score.r2_of(score.block_stats(np.array([1.0]), np.array([1.0]), True)))


def test_the_reduction_is_a_tree():
    pred = da.zeros(100, chunks=1, dtype=np.int64)
    graph = dict(score.score_stats(pred, np.zeros(100, np.int64), False).__dask_graph__())
    merges = [k for k in graph if str(k).startswith("merge_stats")]
    # 100 blocks: 13 merges of at most FAN_IN = 8, then 2, then 1
    assert len(merges) == 16
