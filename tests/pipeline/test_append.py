"""Appending rows to a feature store: segments, resumable, refused on another spec."""

import os
import sys

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, featurize, fit_incremental, open_store, read_npy
from dask_kernels.learn import StoreSource

RNG = np.random.default_rng(11)
DAYS = [np.abs(RNG.standard_normal((n, 8))) for n in (130, 70, 95)]
LABELS = [(d[:, 0] > 0.8).astype(np.int64) for d in DAYS]
G = GCWS(n_components=16, seed=4).fit(DAYS[0][:1])


def test_three_days(tmp_path):
    store = str(tmp_path / "f.zarr")
    stats = []
    for day, (Xd, yd) in enumerate(zip(DAYS, LABELS)):
        p = str(tmp_path / f"day{day}.npy")
        np.save(p, Xd)
        s = featurize(read_npy(p, block_rows=40), G, labels=yd, store=store, mode="append", progress=False)
        stats.append(s.run_stats)
        assert s.complete and s.n_rows == sum(len(d) for d in DAYS[:day + 1])
    assert stats[0] == {"computed": 4, "skipped": 0}
    assert stats[1]["computed"] == 2 and stats[2]["computed"] == 3
    s = open_store(store)
    assert len(s.segments) == 2 and s.n_blocks == 9 and s.done.all() and s.verify_blocks() == {}
    allX, ally = np.concatenate(DAYS), np.concatenate(LABELS)
    assert np.array_equal(s.features.compute(), G.transform(allX)) and np.array_equal(s.labels.compute(), ally)
    assert list(s.blocks())[3:6] == [(120, 130), (130, 170), (170, 200)]
    assert np.array_equal(s.read_block(5)["features"], G.transform(allX[170:200]))
    # training sees every day's rows
    src = StoreSource(s)
    assert src.n_rows == 295 and src.bounds[-1] == (280, 295)
    m = fit_incremental(SGDClassifier(random_state=0), store, epochs=2, validation_fraction=None, progress=False)
    assert np.array_equal(m.predict(s).compute(), m.predict(allX))
    # re-running a day's append resumes its segment: no rows twice
    again = featurize(read_npy(str(tmp_path / "day1.npy"), block_rows=40), G, labels=LABELS[1], store=store,
                      mode="append", progress=False)
    assert again.run_stats["computed"] == 0 and again.n_rows == 295 and len(again.segments) == 2


def test_append_refuses_another_spec_or_columns(tmp_path):
    store = str(tmp_path / "f.zarr")
    featurize(DAYS[0], G, labels=LABELS[0], store=store, block_rows=50, progress=False)
    other = GCWS(n_components=32, seed=4).fit(DAYS[0][:1])
    with pytest.raises(ValueError, match=r"another map.*n_components: 16 \(stored\) != 32"):
        featurize(DAYS[1], other, labels=LABELS[1], store=store, mode="append", progress=False)
    with pytest.raises(ValueError, match="columns"):
        featurize(DAYS[1], G, store=store, mode="append", progress=False)
    with pytest.raises(ValueError, match="overwrite"):
        featurize(DAYS[1], G, store=store, mode="append", overwrite=True, progress=False)
    assert open_store(store).n_rows == 130 and not os.path.exists(os.path.join(store, "segments"))


def test_interrupted_append_is_resumed_and_unlisted_until_done(tmp_path, monkeypatch):
    store = str(tmp_path / "f.zarr")
    featurize(DAYS[0], G, labels=LABELS[0], store=store, block_rows=40, progress=False)
    fz = sys.modules["dask_kernels.pipeline.tasks"]  # where the writing tasks run
    real = fz.write_blocks

    def dies_on_block_1(job, blocks):
        if blocks[0][0] == 1:
            raise KeyboardInterrupt("killed")
        return real(job, blocks)

    monkeypatch.setattr(fz, "write_blocks", dies_on_block_1)
    X1 = da.from_array(DAYS[1], chunks=(20, 8))  # 70 rows: blocks of 40 like the store's, 2 blocks
    with pytest.raises(KeyboardInterrupt), dask.config.set(scheduler="sync"):
        featurize(X1, G, labels=LABELS[1], store=store, mode="append", progress=False)
    s = open_store(store)
    assert s.n_rows == 130 and s.segments == [] and s.complete  # the unfinished segment is not listed
    segs = os.listdir(os.path.join(store, "segments"))
    seg = [n for n in segs if n.startswith("seg-")]
    assert len(seg) == 1
    kept = int(open_store(os.path.join(store, "segments", seg[0])).done.sum())
    assert kept <= 1
    monkeypatch.setattr(fz, "write_blocks", real)
    done = featurize(X1, G, labels=LABELS[1], store=store, mode="append", progress=False)
    assert done.run_stats["computed"] == 2 - kept and done.n_rows == 200
    assert np.array_equal(done.features.compute(), G.transform(np.concatenate(DAYS[:2])))


def test_three_nightly_cli_appends_then_train(tmp_path, capsys):
    """The nightly job: `featurize day.npy store --append` per day (a re-run of a day adds
    nothing), then `train` on the store sees every day's rows."""
    from distributed import LocalCluster

    from dask_kernels.cli import main

    rng = np.random.default_rng(8)
    days = [rng.random((90, 6)) for _ in range(3)]
    for d, X in enumerate(days):
        np.save(tmp_path / f"day{d}.npy", X)
        np.save(tmp_path / f"y{d}.npy", (X[:, 0] > 0.5).astype(np.int64))
    store = str(tmp_path / "f.zarr")
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://",
                      dashboard_address=":0") as lc:
        common = ["--param", "n_components=16", "--block-rows", "40", "--append", "--no-progress",
                  "--scheduler", lc.scheduler_address]
        for d in (0, 1, 1, 2):  # day 1 twice: the cron job ran again
            assert main(["featurize", str(tmp_path / f"day{d}.npy"), store, "--labels", str(tmp_path / f"y{d}.npy"),
                         *common]) == 0
        assert main(["train", store, "-o", str(tmp_path / "m.dk"), "--epochs", "1",
                     "--scheduler", lc.scheduler_address]) == 0
    s = open_store(store)
    assert s.n_rows == 270 and len(s.segments) == 2 and s.verify_blocks() == {}
    g = GCWS(n_components=16).fit(days[0])  # the first night's rows: all of them (its scale)
    assert np.array_equal(s.features.compute(), g.transform(np.concatenate(days)))
    assert "training SoftmaxSGD on 270 rows" in capsys.readouterr().out  # the default on GCWS codes
