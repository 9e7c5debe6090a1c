"""Publishing an output under its name when something else appears there while the command
runs: whatever appeared is never replaced, and neither the new results nor the previous output
(when asked to replace it) are lost: the message says where each one is."""

import os

import dask.array as da
import numpy as np
import pytest

from dask_kernels.cli import _owned, predict
from dask_kernels.cli._args import UsageError


def _kept_at(message, words):
    """The path that follows ``words`` (e.g. "results left at") in the message."""
    tail = message.split(f"{words} ", 1)[1]
    return tail.split(",", 1)[0].split(";", 1)[0].strip()


def test_results_are_kept_when_the_output_appears_while_writing(tmp_path, monkeypatch):
    out = tmp_path / "pred.zarr"
    real = predict.write_marker

    def user_creates_output(tmp, *args, **kwargs):  # the last step before publishing
        out.mkdir()
        (out / "mine.txt").write_text("user")
        return real(tmp, *args, **kwargs)

    monkeypatch.setattr(predict, "write_marker", user_creates_output)
    with pytest.raises(UsageError, match="appeared while the command ran") as e:
        predict.write(da.arange(10, chunks=5), str(out), "zarr", None)
    assert sorted(os.listdir(out)) == ["mine.txt"]  # what appeared: untouched
    kept = _kept_at(str(e.value), "results left at")
    assert os.path.isdir(kept) and os.path.basename(kept).startswith(".pred.zarr.dk-tmp-")


def test_the_previous_output_is_kept_when_something_appears_after_it_was_moved_aside(tmp_path, monkeypatch):
    out = tmp_path / "pred.npy"
    predict.write(da.arange(10, chunks=5), str(out), "npy", None)  # the previous output, ours
    tmp = tmp_path / ".pred.npy.dk-tmp-test"
    np.save(tmp.with_suffix(".npy"), np.arange(3))
    os.rename(tmp.with_suffix(".npy"), tmp)
    real = os.rename

    def rename(src, dst):  # a user's file lands at the name just freed
        real(src, dst)
        if str(src) == str(out) and ".dk-old-" in str(dst):
            out.write_bytes(b"user")

    monkeypatch.setattr(_owned.os, "rename", rename)
    with pytest.raises(UsageError, match="appeared while the command ran") as e:
        _owned.publish(str(tmp), str(out), "npy", None)
    assert out.read_bytes() == b"user"
    assert np.array_equal(np.load(_kept_at(str(e.value), "results left at")), np.arange(3))
    assert np.array_equal(np.load(_kept_at(str(e.value), "the previous output at")), np.arange(10))
