"""Parquet and CSV rows on the command line: featurize, train, score, predict, select, run.

Before, every command refused ``.parquet`` and ``.csv`` inputs ("read in Python"), so a batch
job whose data is a Parquet dataset (the most common big-data input) could not be a job file.
Each command now reads them through :func:`dask_kernels.read_parquet` / :func:`read_csv`, with
``--label-column`` naming the labels and ``--columns`` the features; the results equal the same
rows given as ``.npy`` + ``--labels``.
"""

import os

import numpy as np
import pandas as pd
import pytest

from dask_kernels import load_model, open_store
from dask_kernels.cli import main

from _cli import one_line_error

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(0)
    X = rng.random((300, 5))
    y = (X[:, 0] + X[:, 1] > 1).astype(np.int64)
    df = pd.DataFrame(X, columns=list("abcde"))
    df.insert(2, "label", y)  # between feature columns, as real files have it
    df.assign(name="row").to_parquet(d / "named.parquet")  # a text column: refused unless --columns skip it
    df.iloc[:200].to_parquet(d / "train.parquet", row_group_size=64)
    os.makedirs(d / "dataset")
    df.iloc[:100].to_parquet(d / "dataset" / "part-0.parquet")
    df.iloc[100:200].to_parquet(d / "dataset" / "part-1.parquet")
    df.iloc[200:].to_csv(d / "test.csv", index=False)
    df.iloc[200:].to_csv(d / "test.csv.gz", index=False)
    np.save(d / "X.npy", X[:200])
    np.save(d / "y.npy", y[:200])
    np.save(d / "Xt.npy", X[200:])
    (d / "rows.tsv").write_text("a\tb\n1\t2\n")
    (d / "broken.parquet").write_bytes(b"PAR1\x15\x04" + b"\x00" * 64 + b"PAR1")
    return d, X, y


def _ok(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_featurize_parquet_stores_the_npy_features_and_the_label_column(data, capsys):
    d, X, y = data
    common = ["--method", "rff", "--param", "n_components=32", "--workers", "1", "--no-progress"]
    _ok(capsys, ["featurize", str(d / "train.parquet"), str(d / "p.zarr"), "--label-column", "label"] + common)
    _ok(capsys, ["featurize", str(d / "X.npy"), str(d / "n.zarr"), "--labels", str(d / "y.npy")] + common)
    p, n = open_store(str(d / "p.zarr")), open_store(str(d / "n.zarr"))
    np.testing.assert_array_equal(p.features.compute(), n.features.compute())
    np.testing.assert_array_equal(p.labels.compute(), y[:200])
    # a folder of .parquet files is one dataset, found by its files
    _ok(capsys, ["featurize", str(d / "dataset"), str(d / "f.zarr"), "--label-column", "label"] + common)
    np.testing.assert_array_equal(open_store(str(d / "f.zarr")).features.compute(), n.features.compute())


def test_columns_pick_and_order_the_features(data, capsys):
    d, X, y = data
    _ok(capsys, ["featurize", str(d / "train.parquet"), str(d / "c.zarr"), "--columns", "e,a", "--columns", "b",
                 "--method", "rff", "--param", "n_components=8", "--workers", "1", "--no-progress"])
    store = open_store(str(d / "c.zarr"))
    assert store.labels is None
    from dask_kernels import RFF

    want = RFF(n_components=8).fit(X[:1, [4, 0, 1]]).transform(X[:200, [4, 0, 1]])
    np.testing.assert_array_equal(store.features.compute(), want)


def test_train_score_predict_on_tables_equal_npy(data, capsys):
    d, X, y = data
    train = ["--method", "rff", "--n-components", "32", "--epochs", "2", "--validation-fraction", "0", "--block-rows", "50"]
    _ok(capsys, ["train", str(d / "train.parquet"), "--label-column", "label", "-o", str(d / "mp.dk")] + train)
    _ok(capsys, ["train", str(d / "X.npy"), "--labels", str(d / "y.npy"), "-o", str(d / "mn.dk")] + train)
    mp, mn = load_model(str(d / "mp.dk")), load_model(str(d / "mn.dk"))
    np.testing.assert_array_equal(mp.estimator.coef_, mn.estimator.coef_)
    want = float(np.mean(mn.predict(X[200:]) == y[200:]))
    for test in ("test.csv", "test.csv.gz"):
        out = _ok(capsys, ["score", str(d / "mp.dk"), str(d / test), "--label-column", "label"])
        assert out.strip().endswith(f"100 rows, accuracy {want:.6f}"), out
    _ok(capsys, ["predict", str(d / "mp.dk"), str(d / "test.csv"), "--label-column", "label",
                 "-o", str(d / "pred.npy")])
    np.testing.assert_array_equal(np.load(d / "pred.npy"), mn.predict(X[200:]))


def test_select_reads_a_parquet_label_column(data, capsys):
    d, X, y = data
    args = ["--method", "rff", "--n-components", "8", "--rounds", "2", "--subset-rows", "100"]
    _ok(capsys, ["select", str(d / "train.parquet"), str(d / "sp.json"), "--label-column", "label"] + args)
    _ok(capsys, ["select", str(d / "X.npy"), str(d / "sn.json"), "--labels", str(d / "y.npy")] + args)
    assert (d / "sp.json").read_text() == (d / "sn.json").read_text()


def test_a_job_file_reads_parquet(data, capsys):
    d, X, y = data
    job = d / "job.toml"
    job.write_text('[input]\npath = "train.parquet"\nlabel_column = "label"\ncolumns = ["a", "b", "c", "d", "e"]\n'
                   '[map]\nmethod = "rff"\nparams = { n_components = 16 }\n[store]\npath = "job.zarr"\n'
                   'progress = false\n[cluster]\nworkers = 1\n'
                   '[training]\noutput = "job.dk"\nepochs = 1\n'
                   '[[outputs]]\ninput = "test.csv"\nlabel_column = "label"\npath = "job_pred.npy"\n')
    _ok(capsys, ["run", str(job)])
    model = load_model(str(d / "job.dk"))
    np.testing.assert_array_equal(np.load(d / "job_pred.npy"), model.predict(X[200:]))
    np.testing.assert_array_equal(open_store(str(d / "job.zarr")).labels.compute(), y[:200])
    job.write_text(job.read_text().replace('columns = ["a", "b", "c", "d", "e"]', 'columns = ["a", ""]'))
    line = one_line_error(capsys, ["run", str(job), "--dry-run"])
    assert "[input] columns: expected a list of column names" in line


@pytest.mark.parametrize("argv,message", [
    (["train", "{d}/train.parquet", "-o", "{d}/m.dk"], "source {d}/train.parquet: --label-column NAME is required"),
    (["train", "{d}/train.parquet", "--label-column", "nope", "-o", "{d}/m.dk"],
     "source {d}/train.parquet: label column 'nope' not found (columns: ['a', 'b', 'label',"),
    (["train", "{d}/named.parquet", "--label-column", "name", "-o", "{d}/m.dk"],
     "a classifier needs at least two classes, the labels hold ['row']"),  # a text column: class names
    (["train", "{d}/named.parquet", "--label-column", "label", "-o", "{d}/m.dk"],
     "source {d}/named.parquet: column 'name' ("),
    (["train", "{d}/train.parquet", "--label-column", "label", "--labels", "{d}/y.npy", "-o", "{d}/m.dk"],
     "--labels is for .npy input: parquet labels are a column, use --label-column"),
    (["train", "{d}/X.npy", "--labels", "{d}/y.npy", "--label-column", "label", "-o", "{d}/m.dk"],
     "--columns/--label-column: for Parquet and CSV input, not npy"),
    (["featurize", "{d}/train.parquet", "{d}/e.zarr", "--columns", "a,zz", "--workers", "1"],
     "input {d}/train.parquet: column 'zz' not found (columns:"),
    (["featurize", "{d}/broken.parquet", "{d}/e.zarr", "--workers", "1"],
     "input {d}/broken.parquet: not a readable Parquet file"),
    (["featurize", "{d}/rows.tsv", "{d}/e.zarr"], "read_csv(path, sep='\\t')"),
    (["score", "{d}/mp.dk", "{d}/test.csv"], "has no labels; pass --labels y.npy (.npy, Zarr) or --label-column"),
])
def test_bad_table_arguments_are_one_line_naming_them(data, capsys, argv, message):
    d, _, _ = data
    if argv[0] == "score" and not (d / "mp.dk").exists():
        _ok(capsys, ["train", str(d / "train.parquet"), "--label-column", "label", "-o", str(d / "mp.dk"),
                     "--epochs", "1"])
    line = one_line_error(capsys, [a.format(d=d) for a in argv])
    assert message.format(d=d) in line, line
    assert not (d / "e.zarr").exists() and not (d / "m.dk").exists()


def test_a_parquet_dataset_on_s3_into_an_s3_store(data, s3):
    # fsspec's configuration as a user sets it (FSSPEC_S3), read by the command and its workers: run
    # as a program, as a batch job does (a worker server started by an earlier command in this
    # test process would not see an environment variable set now)
    import json
    import subprocess
    import sys

    d, X, y = data
    opts, fs = s3
    for i in range(2):
        fs.put(str(d / "dataset" / f"part-{i}.parquet"), f"dk-test/train/part-{i}.parquet")
    env = dict(os.environ, FSSPEC_S3=json.dumps(opts))
    argv = [sys.executable, "-m", "dask_kernels.cli", "featurize", "s3://dk-test/train/", "s3://dk-test/f.zarr",
            "--label-column", "label", "--method", "rff", "--param", "n_components=16", "--workers", "1",
            "--no-progress"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    from dask_kernels import RFF

    store = open_store("s3://dk-test/f.zarr", storage_options=opts)
    np.testing.assert_array_equal(store.features.compute(), RFF(n_components=16).fit(X[:1]).transform(X[:200]))
    np.testing.assert_array_equal(store.labels.compute(), y[:200])


def test_train_step_blocks_reaches_fit_incremental(data, capsys):
    # --step-blocks 2 cuts the same rows into half as many partial_fit calls: another model than
    # --step-blocks 1 (the default), the one fit_incremental(step_blocks=2) gives
    d, X, y = data
    common = ["--method", "raw", "--epochs", "1", "--validation-fraction", "0", "--block-rows", "50", "--eta0", "0.1"]
    for k in (1, 2):
        _ok(capsys, ["train", str(d / "X.npy"), "--labels", str(d / "y.npy"), "-o", str(d / f"s{k}.dk"),
                     "--step-blocks", str(k)] + common)
    one, two = (load_model(str(d / f"s{k}.dk")).estimator.coef_ for k in (1, 2))
    assert not np.array_equal(one, two)
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import fit_incremental
    from dask_kernels.learn import ArraySource

    est = SGDClassifier(loss="log_loss", alpha=1e-5, learning_rate="constant", eta0=0.1, random_state=0)
    want = fit_incremental(est, ArraySource(X[:200], y[:200], block_rows=50),
                           classes=np.unique(y), epochs=1, seed=0, step_blocks=2, validation_fraction=None,
                           progress=False)
    np.testing.assert_array_equal(two, want.estimator.coef_)


def test_a_csv_whose_header_is_longer_than_dask_s_sample_is_read(tmp_path, capsys):
    """dask types the columns from the first 256 kB (and the line they end in) and refused a file
    whose header alone filled them, asking to "increase `sample`" (no flag does): a CSV of 20,000
    columns named feature_0, feature_1, ... was unreadable."""
    from dask_kernels.io import read_csv

    values = np.random.default_rng(0).integers(0, 10, (4, 400)).astype(float)
    names = [f"c{j}_" + "x" * 700 for j in range(400)]  # a header of 280 kB
    lines = [",".join(names) + ",label"] + [",".join(f"{v:g}" for v in row) + f",{i % 2}"
                                            for i, row in enumerate(values)]
    path = tmp_path / "wide.csv"
    path.write_text("\n".join(lines) + "\n")
    assert len(lines[0]) > 256_000
    X, y = read_csv(str(path), label="label")
    np.testing.assert_array_equal(X.compute(), values)
    assert y.compute().tolist() == [0, 1, 0, 1]
    assert main(["featurize", str(path), str(tmp_path / "s.zarr"), "--label-column", "label", "--method", "rff",
                 "--no-progress"]) == 0
    assert open_store(str(tmp_path / "s.zarr")).feature_names == names
