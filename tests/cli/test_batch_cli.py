"""The command line finishes batch jobs: featurize with labels, train from the store (also by
URL), predict / score / info, --scheduler-file, --version, a full-data center=mean, plain-line
progress in logs, one job per file however it is named, compressed svmlight, and job files.

Cluster work runs on the session's shared LocalCluster (``--scheduler ADDRESS``) to stay fast.
"""

import json
import os
import re
import sys
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_kernels import __version__, load_model, open_store
from dask_kernels.cli import main


@pytest.fixture(scope="module")
def cluster(local_cluster):
    return local_cluster  # the session's shared LocalCluster (tests/conftest.py)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("batch")
    rng = np.random.default_rng(0)
    X = rng.random((600, 6))
    y = (X[:, 0] + X[:, 1] > 1).astype(np.int64)
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", y)
    return d, X, y


def _main(argv, capsys):
    """``(exit status, stderr)`` of the CLI run in this process (argparse errors included)."""
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err


def _one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"dask-kernels {__version__}"


def test_npy_dataset_featurized_with_labels_trains_from_its_store(data, cluster, tmp_path, capsys):
    d, X, y = data
    store = tmp_path / "f.zarr"
    assert main(["featurize", str(d / "X.npy"), str(store), "--labels", str(d / "y.npy"), "--block-rows", "150",
                 "--param", "n_components=64", "--scheduler", cluster, "--no-progress"]) == 0
    s = open_store(str(store))
    assert np.array_equal(s.labels.compute(), y)
    model_dir = tmp_path / "m.dk"
    assert main(["train", str(store), "-o", str(model_dir), "--epochs", "3"]) == 0
    model = load_model(model_dir)
    assert model.feature_map.spec() == s.feature_map.spec()
    assert model.score(X, y) > 0.8  # a linear boundary; chance is ~0.5


def test_featurize_labels_of_the_wrong_length_are_refused(data, cluster, tmp_path, capsys):
    d, _, _ = data
    np.save(tmp_path / "short.npy", np.zeros(10))
    rc, err = _main(["featurize", str(d / "X.npy"), str(tmp_path / "f.zarr"), "--labels",
                     str(tmp_path / "short.npy"), "--scheduler", cluster], capsys)
    assert rc == 1
    line = _one_line(err)
    assert "--labels" in line and "(600,)" in line
    assert not (tmp_path / "f.zarr").exists()


def test_train_refuses_a_store_without_labels_naming_the_fix(data, cluster, tmp_path, capsys):
    d, _, _ = data
    store = tmp_path / "nolabels.zarr"
    assert main(["featurize", str(d / "X.npy"), str(store), "--param", "n_components=16", "--scheduler", cluster,
                 "--no-progress"]) == 0
    rc, err = _main(["train", str(store), "-o", str(tmp_path / "m.dk")], capsys)
    assert rc == 1 and "--labels" in _one_line(err)
    assert not (tmp_path / "m.dk").exists()


def test_store_urls_everywhere(data, cluster, tmp_path, capsys):
    d, X, y = data
    url = "file://" + str(tmp_path / "u.zarr")
    assert main(["featurize", "file://" + str(d / "X.npy"), url, "--labels", str(d / "y.npy"),
                 "--param", "n_components=32", "--scheduler", cluster, "--no-progress"]) == 0
    assert main(["train", url, "-o", str(tmp_path / "m.dk"), "--epochs", "2"]) == 0
    capsys.readouterr()
    assert main(["info", url]) == 0
    out = capsys.readouterr().out
    assert "rows: 600 x 32 uint8" in out and "complete: yes" in out
    assert main(["score", str(tmp_path / "m.dk"), url, "--scheduler", cluster]) == 0
    assert float(capsys.readouterr().out.split()[-1]) == pytest.approx(load_model(tmp_path / "m.dk").score(X, y))
    # predictions from the store's features equal those from the raw rows
    assert main(["predict", str(tmp_path / "m.dk"), url, "-o", str(tmp_path / "p.npy"), "--scheduler", cluster]) == 0
    assert np.array_equal(np.load(tmp_path / "p.npy"), load_model(tmp_path / "m.dk").predict(X))


def test_train_n_features_lets_the_model_score_a_wider_svmlight_file(tmp_path, cluster, capsys):
    rng = np.random.default_rng(1)
    X = rng.random((400, 8))
    y = (X[:, 0] > 0.5).astype(int)
    train, test = X.copy(), X.copy()
    train[:, 6:] = 0  # the training file's highest index is 6, the test file's 8
    dump_svmlight_file(train, y, str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(test, y, str(tmp_path / "test.svm"), zero_based=False)
    model = tmp_path / "m.dk"
    assert main(["train", str(tmp_path / "train.svm"), "--n-features", "8", "--method", "gcws",
                 "--n-components", "64", "--epochs", "3", "-o", str(model)]) == 0
    assert load_model(model).feature_map.n_features_in_ == 8
    capsys.readouterr()
    assert main(["score", str(model), str(tmp_path / "test.svm"), "--scheduler", cluster]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(str(tmp_path / "test.svm")) and "accuracy" in last
    assert 0.7 < float(last.split()[-1]) <= 1.0


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    d, X, y = data
    m = tmp_path_factory.mktemp("model") / "m.dk"
    assert main(["train", str(d / "X.npy"), "--labels", str(d / "y.npy"), "--method", "gcws", "--n-components",
                 "32", "--epochs", "2", "-o", str(m)]) == 0
    return load_model(m), m


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_predict_writes_what_the_model_predicts(data, trained, cluster, tmp_path, suffix):
    import zarr

    d, X, _ = data
    model, path = trained
    out = tmp_path / f"pred{suffix}"
    assert main(["predict", str(path), str(d / "X.npy"), "-o", str(out), "--scheduler", cluster]) == 0
    got = np.load(out) if suffix == ".npy" else zarr.open_array(str(out), mode="r")[:]
    assert np.array_equal(got, model.predict(X))
    out = tmp_path / f"proba{suffix}"
    assert main(["predict", str(path), str(d / "X.npy"), "-o", str(out), "--proba", "--scheduler", cluster]) == 0
    got = np.load(out) if suffix == ".npy" else zarr.open_array(str(out), mode="r")[:]
    np.testing.assert_allclose(got, model.predict_proba(X), rtol=1e-12)
    assert not [n for n in os.listdir(tmp_path) if "dk-tmp" in n]


def test_predict_parquet_if_pyarrow_else_a_clear_refusal(data, trained, cluster, tmp_path, capsys):
    d, X, _ = data
    model, path = trained
    out = tmp_path / "pred.parquet"
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        rc, err = _main(["predict", str(path), str(d / "X.npy"), "-o", str(out), "--scheduler", cluster], capsys)
        assert rc == 1 and "pyarrow" in _one_line(err)
        return
    import dask.dataframe as dd

    assert main(["predict", str(path), str(d / "X.npy"), "-o", str(out), "--scheduler", cluster]) == 0
    assert np.array_equal(dd.read_parquet(str(out))["prediction"].compute().to_numpy(), model.predict(X))


@pytest.mark.parametrize("existing", ["file", "dir"])
def test_predict_never_replaces_an_existing_output(data, trained, tmp_path, capsys, existing):
    d, _, _ = data
    out = tmp_path / "pred.npy"
    if existing == "file":
        out.write_text("mine")
    else:
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    rc, err = _main(["predict", str(trained[1]), str(d / "X.npy"), "-o", str(out), "--workers", "1"], capsys)
    assert rc == 1 and "already exists" in _one_line(err)  # refused before a cluster starts
    assert (out.read_text() if existing == "file" else (out / "keep.txt").read_text()) == "mine"


@pytest.mark.parametrize("cmd", ["featurize", "predict", "score"])
def test_empty_scheduler_is_an_error(data, trained, tmp_path, capsys, cmd):
    d, _, _ = data
    args = {"featurize": [str(d / "X.npy"), str(tmp_path / "f.zarr")],
            "predict": [str(trained[1]), str(d / "X.npy"), "-o", str(tmp_path / "p.npy")],
            "score": [str(trained[1]), str(d / "X.npy"), "--labels", str(d / "y.npy")]}[cmd]
    rc, err = _main([cmd, *args, "--scheduler", ""], capsys)
    assert rc == 2 and "--scheduler" in _one_line(err)


def test_score_prints_the_score_as_the_last_field(data, trained, cluster, capsys):
    d, X, y = data
    assert main(["score", str(trained[1]), str(d / "X.npy"), "--labels", str(d / "y.npy"),
                 "--scheduler", cluster]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert float(last.split()[-1]) == pytest.approx(trained[0].score(X, y), abs=1e-6)


def test_info_summarizes_and_verifies_a_store(data, cluster, tmp_path, capsys):
    d, _, _ = data
    store = tmp_path / "f.zarr"
    assert main(["featurize", str(d / "X.npy"), str(store), "--block-rows", "200", "--param", "n_components=16",
                 "--scheduler", cluster, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["info", str(store), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["rows"], s["blocks"], s["blocks_done"], s["complete"], s["method"]) == (600, 3, 3, True, "gcws")
    assert s["params"]["n_components"] == 16
    # damage block 1's stored features: --verify reads every block and names the bad one
    chunk = next(p for p in (store / "features").rglob("*") if p.is_file() and p.parts[-2:] == ("1", "0"))
    chunk.write_bytes(b"\0" * len(chunk.read_bytes()))
    assert main(["info", str(store), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "integrity: 2 of 3 blocks verified; bad: block 1" in out


def test_scheduler_file_is_waited_for(data, cluster, tmp_path, capsys):
    d, _, _ = data
    sched = tmp_path / "scheduler.json"

    def write_later():
        time.sleep(2.0)
        (tmp_path / "half.json").write_text(json.dumps({"address": cluster}))
        os.replace(tmp_path / "half.json", sched)

    t = threading.Thread(target=write_later)
    t.start()
    t0 = time.monotonic()
    rc = main(["featurize", str(d / "X.npy"), str(tmp_path / "f.zarr"), "--param", "n_components=16",
               "--scheduler-file", str(sched), "--scheduler-file-timeout", "60", "--no-progress"])
    t.join()
    assert rc == 0 and time.monotonic() - t0 >= 2.0
    assert open_store(str(tmp_path / "f.zarr")).complete


def test_missing_scheduler_file_fails_in_bounded_time_naming_the_flag(data, tmp_path, capsys):
    d, _, _ = data
    t0 = time.monotonic()
    rc, err = _main(["featurize", str(d / "X.npy"), str(tmp_path / "f.zarr"), "--scheduler-file",
                     str(tmp_path / "never.json"), "--scheduler-file-timeout", "1"], capsys)
    assert rc == 1 and time.monotonic() - t0 < 10
    line = _one_line(err)
    assert "--scheduler-file" in line and "never.json" in line and "waited 1 s" in line
    assert not (tmp_path / "f.zarr").exists()


def test_center_mean_is_the_mean_of_all_rows(tmp_path, cluster):
    X = np.ones((300, 4))
    X[:100] = 0.0  # the first block alone would say mean 0
    np.save(tmp_path / "X.npy", X)
    assert main(["featurize", str(tmp_path / "X.npy"), str(tmp_path / "f.zarr"), "--block-rows", "100",
                 "--param", "center=mean", "--param", "n_components=16", "--scheduler", cluster,
                 "--no-progress"]) == 0
    fmap = open_store(str(tmp_path / "f.zarr")).feature_map
    np.testing.assert_allclose(fmap.center_, np.full(4, 2 / 3), rtol=1e-15)


def test_center_mean_over_svmlight_partitions(tmp_path, cluster):
    X = np.zeros((200, 3))
    X[100:] = [1.0, 2.0, 4.0]
    dump_svmlight_file(X + 1.0, np.zeros(200), str(tmp_path / "x.svm"), zero_based=False)
    assert main(["featurize", str(tmp_path / "x.svm"), str(tmp_path / "f.zarr"), "--blocksize", "500",
                 "--param", "center=mean", "--param", "n_components=16", "--scheduler", cluster,
                 "--no-progress"]) == 0
    np.testing.assert_allclose(open_store(str(tmp_path / "f.zarr")).feature_map.center_, [1.5, 2.0, 3.0])


def test_progress_in_logs_is_plain_lines(data, cluster, tmp_path, capsys):
    d, _, _ = data
    assert not sys.stderr.isatty()  # captured, as in a batch log
    capsys.readouterr()
    assert main(["featurize", str(d / "X.npy"), str(tmp_path / "f.zarr"), "--block-rows", "50",
                 "--param", "n_components=16", "--scheduler", cluster]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in out + err  # no redrawn bar in a log file
    done = re.findall(r"^\[featurize\] (\d+)/(\d+) tasks \(100%\) [\d.]+ s$", err, flags=re.M)
    assert done and done[-1][0] == done[-1][1] and int(done[-1][1]) >= 12, err  # >= one task per block


def test_plain_progress_prints_a_line_every_interval(capsys):
    import io

    import dask

    from dask_kernels._progress import PlainProgress

    stream = io.StringIO()
    tasks = [dask.delayed(time.sleep)(0.05) for _ in range(20)]
    t0 = time.perf_counter()
    with PlainProgress("x", interval=0.2, stream=stream):
        dask.compute(*tasks, scheduler="synchronous")
    elapsed = time.perf_counter() - t0
    lines = stream.getvalue().splitlines()
    # at most one line per 0.2 s of the run (>= 1 s of work), plus the final line; never one per task
    assert 3 <= len(lines) <= elapsed / 0.2 + 2 and len(lines) < len(tasks), (elapsed, lines)
    assert lines[-1].startswith("[x] 20/20 tasks (100%)")


def test_plain_progress_on_a_cluster_returns_when_the_work_is_done(cluster):
    """The plain lines are printed every ``interval`` seconds, but the wait must end with the
    work: it looked at the scheduler only every ``interval``, so a batch command sat idle up to
    5 s after its last task."""
    import io

    from distributed import Client

    from dask_kernels._progress import wait_futures

    stream = io.StringIO()
    with Client(cluster) as client:
        futures = client.map(time.sleep, [0.2, 0.3])
        t0 = time.perf_counter()
        wait_futures(futures, label="x", interval=30, stream=stream)
        elapsed = time.perf_counter() - t0
    assert elapsed < 10, elapsed  # before: 30 s, the second look
    assert stream.getvalue().splitlines()[-1].startswith("[x] 2/2 tasks (100%)"), stream.getvalue()


def test_same_file_by_relative_absolute_or_linked_path_is_the_same_job(tmp_path, cluster, capsys, monkeypatch):
    X = np.random.default_rng(0).random((100, 5))
    dump_svmlight_file(X, np.zeros(100), str(tmp_path / "x.svm"), zero_based=False)
    os.symlink(tmp_path / "x.svm", tmp_path / "link.svm")
    base = ["--param", "n_components=16", "--scheduler", cluster, "--no-progress"]
    monkeypatch.chdir(tmp_path)
    assert main(["featurize", "x.svm", "f.zarr", *base]) == 0
    for name in (str(tmp_path / "x.svm"), "link.svm"):
        capsys.readouterr()
        assert main(["featurize", name, str(tmp_path / "f.zarr"), *base]) == 0, capsys.readouterr().err
        assert "0 computed, 1 already done" in capsys.readouterr().out


def test_gzipped_svmlight_works_or_says_so_in_one_line(tmp_path, cluster, capsys):
    import gzip

    X = np.round(np.random.default_rng(0).random((50, 4)), 3)
    dump_svmlight_file(X, np.zeros(50), str(tmp_path / "x.svm"), zero_based=False)
    with open(tmp_path / "x.svm", "rb") as f, gzip.open(tmp_path / "x.svm.gz", "wb") as g:
        g.write(f.read())
    rc, err = _main(["featurize", str(tmp_path / "x.svm.gz"), str(tmp_path / "f.zarr"), "--param",
                     "n_components=16", "--scheduler", cluster, "--no-progress"], capsys)
    if rc == 0:  # the library reads compressed svmlight
        assert open_store(str(tmp_path / "f.zarr")).n_rows == 50
    else:
        line = _one_line(err)
        assert rc == 1 and "gzip" in line and "x.svm.gz" in line and "\\x" not in line, line
