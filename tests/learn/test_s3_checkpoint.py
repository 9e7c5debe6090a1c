"""Training checkpoints on s3:// (the local moto server of tests/conftest.py): resume gives bitwise
the coefficients of an uninterrupted run; objects that are not checkpoints are never replaced;
an interrupted upload leaves the previous checkpoint; a torn or mismatched object is refused
naming its URL."""

import fsspec
import numpy as np
import pytest

from _checkpoint_runs import Stop, checkpointed_fit

from dask_kernels import GCWS

RNG = np.random.default_rng(1)
X = RNG.random((600, 4))
Y = (X[:, 0] * X[:, 1] > 0.25).astype(int)
G = GCWS(n_components=16, seed=0).fit(X)


@pytest.fixture
def s3c(s3, monkeypatch):
    """The moto server as fsspec's default S3 (what FSSPEC_S3=... does): checkpoint URLs carry no options."""
    opts, fs = s3
    monkeypatch.setitem(fsspec.config.conf, "s3", opts)
    return fs


def _fit(ck, **kw):
    return checkpointed_fit(X, Y, G, ck, **kw)


def _interrupted(ck, epoch=1, position=3):
    def cb(info):
        if info["epoch"] == epoch and info["position"] == position:
            raise Stop
    with pytest.raises(Stop):
        _fit(ck, callback=cb)


def _coef(model):
    est = model.estimator
    return est.coef_.copy(), est.intercept_.copy()


def test_resume_on_s3_is_bitwise_the_uninterrupted_run(s3c):
    ref = _coef(_fit(None))
    ck = "s3://dk-test/ckpt/run.ckpt"
    _interrupted(ck)
    assert s3c.isfile("dk-test/ckpt/run.ckpt")
    coef, icpt = _coef(_fit(ck))
    assert np.array_equal(coef, ref[0]) and np.array_equal(icpt, ref[1])
    assert s3c.ls("dk-test/ckpt", detail=False) == ["dk-test/ckpt/run.ckpt"]  # nothing else left behind


def test_objects_that_are_not_checkpoints_are_never_replaced(s3c):
    s3c.pipe_file("dk-test/user/notes.txt", b"my notes")
    for resume in (True, False):
        with pytest.raises(ValueError, match="not a dask_kernels checkpoint") as info:
            _fit("s3://dk-test/user/notes.txt", resume=resume)
        assert "s3://dk-test/user/notes.txt" in str(info.value)
    assert s3c.cat_file("dk-test/user/notes.txt") == b"my notes"
    s3c.pipe_file("dk-test/user/ck/f", b"x")  # a prefix holding objects: a "directory"
    with pytest.raises(ValueError, match="is not a file"):
        _fit("s3://dk-test/user/ck", resume=False)
    assert s3c.cat_file("dk-test/user/ck/f") == b"x"
    with pytest.raises(ValueError, match="bucket no-such-bucket does not exist"):
        _fit("s3://no-such-bucket/run.ckpt")


def test_an_interrupted_upload_leaves_the_previous_checkpoint(s3c, monkeypatch):
    ref = _coef(_fit(None))
    ck, key = "s3://dk-test/ckpt2/run.ckpt", "dk-test/ckpt2/run.ckpt"
    _interrupted(ck)
    before = s3c.cat_file(key)
    fs = fsspec.core.url_to_fs(ck)[0]

    def killed(*a, **k):
        raise KeyboardInterrupt("killed during the upload (injected)")

    with monkeypatch.context() as m:
        m.setattr(fs, "pipe_file", killed)  # s3fs sets its sync methods per instance (instances are cached)
        with pytest.raises(KeyboardInterrupt):
            _fit(ck)
    s3c.invalidate_cache()
    assert s3c.cat_file(key) == before
    coef, icpt = _coef(_fit(ck))  # the previous checkpoint still resumes, to the same model
    assert np.array_equal(coef, ref[0]) and np.array_equal(icpt, ref[1])


def test_a_torn_or_mismatched_object_is_refused_naming_the_url(s3c, monkeypatch):
    ck, key = "s3://dk-test/ckpt3/run.ckpt", "dk-test/ckpt3/run.ckpt"
    _interrupted(ck)
    whole = s3c.cat_file(key)
    s3c.pipe_file(key, whole[: len(whole) // 2])  # what a write in place killed midway leaves
    with pytest.raises(ValueError, match="not a dask_kernels checkpoint") as info:
        _fit(ck)
    assert ck in str(info.value)
    mid = len(whole) // 3  # inside the estimator's arrays: the format marker still reads
    s3c.pipe_file(key, whole[:mid] + bytes([whole[mid] ^ 0xFF]) + whole[mid + 1:])
    with pytest.raises(ValueError, match="damaged|bad .npy header|bytes") as info:
        _fit(ck)
    assert ck in str(info.value) and "dk-ckpt-" not in str(info.value)
    # write, then verify: an object that does not read back as written stops training
    s3c.pipe_file(key, whole)
    fs = fsspec.core.url_to_fs(ck)[0]
    real = fs.cat_file

    def other_bytes(path, *a, **k):
        data = real(path, *a, **k)
        return data[:-1] + bytes([data[-1] ^ 1]) if path.endswith("ckpt3/run.ckpt") else data

    with monkeypatch.context() as m:
        m.setattr(fs, "cat_file", other_bytes)
        with pytest.raises(OSError, match="read back after the upload differs") as info:
            _fit(ck)
    assert ck in str(info.value)
