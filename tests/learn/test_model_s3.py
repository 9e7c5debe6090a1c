"""Saved models on s3:// against a real S3 API (the ``s3`` fixture: a local moto server):
save/load, the never-overwrite rules without rename (model.json is the completion marker,
written last), and the CLI's train/predict/score with s3:// stores and models."""

import json

import fsspec
import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel, featurize, load_model
from dask_kernels.cli import main
from dask_kernels.pipeline.location import filesystem

RNG = np.random.default_rng(3)
X = RNG.random((240, 5))
Y = (X[:, 0] + X[:, 1] > 1).astype(np.int64)


def _model(seed=0):
    g = GCWS(n_components=16, seed=seed).fit(X[:1])
    return KernelModel(g, SGDClassifier(random_state=seed).fit(g.expand(g.transform(X)), Y))


def test_save_and_load_on_s3(s3):
    opts, fs = s3
    url = "s3://dk-test/models/a.dk"
    m = _model()
    assert m.save(url, storage_options=opts) == url
    assert sorted(fs.ls("dk-test/models/a.dk", detail=False)) == ["dk-test/models/a.dk/arrays.npz",
                                                                   "dk-test/models/a.dk/model.json"]
    back = load_model(url, storage_options=opts)
    assert np.array_equal(back.predict(X), m.predict(X)) and back.feature_map.spec() == m.feature_map.spec()
    with pytest.raises(FileExistsError, match="already holds a saved model: pass overwrite=True"):
        _model(1).save(url, storage_options=opts)
    other = _model(1)
    other.save(url, overwrite=True, storage_options=opts)
    assert load_model(url, storage_options=opts).feature_map.spec() == other.feature_map.spec()
    with pytest.raises(FileNotFoundError, match="s3://dk-test/models/none.dk is not a saved model"):
        load_model("s3://dk-test/models/none.dk", storage_options=opts)


def test_objects_that_are_not_a_model_are_never_replaced(s3):
    opts, fs = s3
    fs.pipe_file("dk-test/models/user/data.csv", b"a,b\n")
    fs.pipe_file("dk-test/models/file.dk", b"x")
    for url in ("s3://dk-test/models/user", "s3://dk-test/models/file.dk"):
        with pytest.raises(FileExistsError, match="refusing to replace it"):
            _model().save(url, overwrite=True, storage_options=opts)
    assert fs.cat("dk-test/models/user/data.csv") == b"a,b\n" and fs.cat("dk-test/models/file.dk") == b"x"
    assert fs.ls("dk-test/models/user", detail=False) == ["dk-test/models/user/data.csv"]


def test_a_save_killed_before_its_marker_never_loads(s3, monkeypatch):
    """No rename on S3: model.json goes last, so a save that dies before it leaves nothing that
    loads, and replacing a model removes the old marker first (never a mix of two models)."""
    opts, fs = s3
    url = "s3://dk-test/models/k.dk"
    _model(0).save(url, storage_options=opts)
    writer, _ = filesystem(url, opts)  # the (cached) file system the save uploads with
    put = writer.put_file

    def dies_before_the_marker(lpath, rpath, *args, **kwargs):
        if str(rpath).endswith("model.json"):
            raise KeyboardInterrupt("killed")
        return put(lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(writer, "put_file", dies_before_the_marker)
    with pytest.raises(KeyboardInterrupt):
        _model(1).save(url, overwrite=True, storage_options=opts)
    monkeypatch.setattr(writer, "put_file", put)
    fs.invalidate_cache()
    assert fs.ls("dk-test/models/k.dk", detail=False) == ["dk-test/models/k.dk/arrays.npz"]
    with pytest.raises(FileNotFoundError, match="no s3://dk-test/models/k.dk/model.json"):
        load_model(url, storage_options=opts)
    with pytest.raises(FileExistsError, match="a model save that did not finish"):
        _model(2).save(url, storage_options=opts)
    _model(2).save(url, overwrite=True, storage_options=opts)
    assert load_model(url, storage_options=opts).feature_map.seed == 2


def test_a_damaged_model_on_s3_is_named_by_its_url(s3):
    opts, fs = s3
    url = "s3://dk-test/models/bad.dk"
    _model().save(url, storage_options=opts)
    meta = json.loads(fs.cat("dk-test/models/bad.dk/model.json"))
    meta["estimator"]["class"] = "os.system"
    fs.pipe_file("dk-test/models/bad.dk/model.json", json.dumps(meta).encode())
    with pytest.raises(ValueError, match=r"^s3://dk-test/models/bad.dk/model.json: estimator.class 'os.system'"):
        load_model(url, storage_options=opts)
    fs.pipe_file("dk-test/models/bad.dk/model.json", b"{" * 10)
    with pytest.raises(ValueError, match=r"s3://dk-test/models/bad.dk/model.json is not valid JSON"):
        load_model(url, storage_options=opts)


def test_cli_train_predict_score_with_s3_stores_and_models(s3, monkeypatch, tmp_path, capsys):
    from distributed import LocalCluster

    opts, fs = s3
    monkeypatch.setitem(fsspec.config.conf, "s3", opts)  # what FSSPEC_S3=... does for the CLI
    store, model = "s3://dk-test/cli/f.zarr", "s3://dk-test/cli/m.dk"
    featurize(X, GCWS(n_components=16, seed=0).fit(X[:1]), labels=Y, store=store, block_rows=80,
              storage_options=opts, progress=False)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://",
                      dashboard_address=":0") as lc:
        sched = ["--scheduler", lc.scheduler_address]
        assert main(["train", store, "-o", model, "--epochs", "2", *sched]) == 0
        assert fs.exists("dk-test/cli/m.dk/model.json")
        capsys.readouterr()
        assert main(["train", store, "-o", model, "--epochs", "1", *sched]) == 1
        assert "already holds a saved model: pass --overwrite" in capsys.readouterr().err
        assert main(["predict", model, store, "-o", str(tmp_path / "p.npy"), *sched]) == 0
        assert main(["predict", model, store, "-o", "s3://dk-test/cli/p.zarr", "--proba", *sched]) == 0
        assert main(["score", model, store, *sched]) == 0
    m = load_model(model, storage_options=opts)
    pred = np.load(tmp_path / "p.npy")
    assert np.array_equal(pred, m.predict(X))
    import zarr

    proba = zarr.open_array("s3://dk-test/cli/p.zarr", mode="r", storage_options=opts)[:]
    assert np.allclose(proba, m.predict_proba(X))
    score = float(capsys.readouterr().out.strip().splitlines()[-1].split()[-1])
    assert score == pytest.approx(float(np.mean(pred == Y)), abs=1e-6)
