"""Tables as input: Parquet (row counts from the metadata), CSV and dask DataFrames in general."""

import os

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel, featurize, fit_incremental, open_store, read_csv, read_parquet
from dask_kernels.io import from_dataframe

RNG = np.random.default_rng(3)
X = np.abs(RNG.standard_normal((500, 6)))
Y = (X[:, 0] > np.median(X[:, 0])).astype(np.int64)
G = GCWS(n_components=32, seed=2).fit(X[:1])
REF = G.transform(X)
COLS = [f"x{j}" for j in range(6)]


def _frame(text=False):
    df = pd.DataFrame(X.copy(), columns=COLS)  # a copy: tests edit it, X stays the reference
    df["y"] = Y
    if text:  # not a number: a feature only when selected, and then refused
        df["name"] = [f"r{i}" for i in range(len(df))]
    return df


def _write_parquet(folder, files=2, row_group_size=50, text=False):
    os.makedirs(folder, exist_ok=True)
    df = _frame(text)
    edges = np.linspace(0, len(df), files + 1).astype(int)
    for k in range(files):
        part = pa.Table.from_pandas(df.iloc[edges[k]:edges[k + 1]], preserve_index=False)
        pq.write_table(part, os.path.join(folder, f"part-{k}.parquet"), row_group_size=row_group_size)
    return folder


def test_read_parquet_row_counts_from_metadata_and_values(tmp_path):
    folder = _write_parquet(str(tmp_path / "t"))
    X_, y_ = read_parquet(folder, label="y", block_rows=100)
    # 2 files of 250 rows in row groups of 50: runs of 2 groups (100 rows), the rest of each file
    assert X_.chunks == ((100, 100, 50, 100, 100, 50), (6,))
    assert y_.chunks == ((100, 100, 50, 100, 100, 50),)
    assert X_.dtype == np.float64 and np.array_equal(X_.compute(), X)
    assert np.array_equal(y_.compute(), Y)
    sub = read_parquet(folder, columns=["x3", "x1"])
    assert np.array_equal(sub.compute(), X[:, [3, 1]])
    # the same files give the same dask name (what a store's fingerprint holds)
    assert read_parquet(folder, label="y", block_rows=100)[0].name == X_.name


def test_read_parquet_refuses_text_columns_and_names_null_rows(tmp_path):
    folder = _write_parquet(str(tmp_path / "t"), text=True)
    with pytest.raises(ValueError, match="column 'name' has type (large_)?string, not a number"):
        read_parquet(folder, columns=["x0", "name"])
    with pytest.raises(ValueError, match="label column 'nope' not found"):
        read_parquet(folder, label="nope")
    df = _frame()
    df.loc[123, "x4"] = None
    p = str(tmp_path / "nulls.parquet")
    df.to_parquet(p, index=False)
    Xn = read_parquet(p, label="y")[0]
    with pytest.raises(ValueError, match=r"row 123.*column 4|column 4.*row 123"):
        featurize(Xn, G).compute()


def test_featurize_parquet_into_store_matches_numpy(tmp_path):
    folder = _write_parquet(str(tmp_path / "t"), files=3, row_group_size=40)
    X_, y_ = read_parquet(folder, label="y", block_rows=80)
    s = featurize(X_, G, labels=y_, store=str(tmp_path / "s.zarr"), block_rows=100, progress=False)
    assert s.complete and s.n_blocks == 5
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    again = featurize(read_parquet(folder, label="y", block_rows=80)[0], G,
                      labels=read_parquet(folder, label="y", block_rows=80)[1], store=s.path, block_rows=100,
                      progress=False)
    assert again.run_stats == {"computed": 0, "skipped": 5}  # same files: the same job, resumed


class _Counter:
    calls = 0


def _make_part(i, n):
    _Counter.calls += 1
    return pd.DataFrame(X[i * n:(i + 1) * n], columns=COLS)


def test_featurize_dataframe_is_lazy_with_partitions_as_blocks():
    """Base code computed every partition into the client and returned a single chunk."""
    n = 100
    parts = [dask.delayed(_make_part, pure=False)(i, n) for i in range(5)]
    ddf = dd.from_delayed(parts, meta=pd.DataFrame({c: pd.Series(dtype="f8") for c in COLS}))
    _Counter.calls = 0
    with dask.config.set(scheduler="sync"):
        F = featurize(ddf, G)
        # nothing read (no store: no row offsets needed): partitions are blocks of unknown size
        assert _Counter.calls == 0
        assert isinstance(F, da.Array) and len(F.chunks[0]) == 5 and np.isnan(F.chunks[0]).all()
        assert np.array_equal(F.compute(), REF)
        assert F.compute_chunk_sizes().chunks == ((100,) * 5, (32,))


def test_dataframe_trains_and_predicts():
    """Base code: TypeError about a dask Scalar (unknown row count) in fit_incremental/predict."""
    df = pd.DataFrame(X, columns=COLS)
    ddf = dd.from_pandas(df, npartitions=4)
    y = dd.from_pandas(pd.Series(Y), npartitions=4)
    model = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), ddf, y, feature_map=G, epochs=3,
                            progress=False)
    assert isinstance(model, KernelModel)
    pred = model.predict(ddf)
    assert isinstance(pred, da.Array) and np.isnan(pred.shape[0])  # lazy: no pass over the rows for their lengths
    assert pred.compute_chunk_sizes().chunks == (tuple(len(p) for p in np.array_split(np.arange(500), 4)),)
    ref = model.predict(X)
    assert np.array_equal(pred.compute(), ref)
    assert np.mean(ref == Y) > 0.8  # a learnable threshold on x0: the model learned it


def test_from_dataframe_and_read_csv(tmp_path):
    df = _frame()
    X_, y_ = from_dataframe(dd.from_pandas(df, npartitions=3), label="y")
    assert X_.chunks[0] == (167, 167, 166) and X_.shape == (500, 6)
    assert np.array_equal(X_.compute(), X) and np.array_equal(y_.compute(), Y)
    p = str(tmp_path / "t.csv")
    df.to_csv(p, index=False, float_format="%.17g")
    Xc, yc = read_csv(p, label="y", blocksize=8000)
    assert Xc.numblocks[0] > 2 and sum(Xc.chunks[0]) == 500
    assert np.array_equal(Xc.compute(), X) and np.array_equal(yc.compute(), Y)
    _frame(text=True).to_csv(str(tmp_path / "text.csv"), index=False)
    with pytest.raises(ValueError, match="column 'name' has dtype"):
        read_csv(str(tmp_path / "text.csv"), columns=["x0", "name"])
    s = featurize(Xc, G, labels=yc, store=str(tmp_path / "c.zarr"), progress=False)
    assert np.array_equal(open_store(s.path).features.compute(), REF)


def test_many_mixed_columns_become_exact_rows(tmp_path):
    """Columns are turned into rows in batches of 64: 150 columns of mixed types (ints, floats,
    booleans, a null) in a chosen order land in the right place."""
    rng = np.random.default_rng(4)
    cols = {}
    for j in range(150):
        kind = j % 3
        cols[f"c{j}"] = (rng.integers(-5, 5, 37) if kind == 0 else rng.random(37) if kind == 1
                         else rng.random(37) < 0.5)
    table = pa.table(cols)
    pq.write_table(table, tmp_path / "m.parquet", row_group_size=10)
    order = [f"c{j}" for j in rng.permutation(150)]
    X = read_parquet(str(tmp_path / "m.parquet"), columns=order, block_rows=20)
    expected = np.column_stack([np.asarray(cols[c], dtype=np.float64) for c in order])
    got = X.compute()
    assert X.dtype == np.float64 and np.array_equal(got, expected)
    for block in X.to_delayed().ravel():
        assert block.compute().flags.c_contiguous
