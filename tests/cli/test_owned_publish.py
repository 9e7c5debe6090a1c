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


def _age(path, seconds):
    for p in [path] + [os.path.join(d, n) for d, ds, fs in os.walk(path) for n in ds + fs]:
        os.utime(p, (os.stat(p).st_atime - seconds, os.stat(p).st_mtime - seconds))


@pytest.mark.parametrize("suffix", [".zarr", ".parquet", ".npy"])
def test_what_a_killed_run_left_is_removed_by_the_next_once_stale(tmp_path, suffix):
    # a run killed while writing (SIGKILL, OOM, a node lost) left its temporary beside the output,
    # which no later run removed: one more copy of the predictions per crash
    out = tmp_path / f"pred{suffix}"
    kind = suffix[1:]
    part = tmp_path / f"part{suffix}"  # real files of an output: a killed run had written some of them
    predict.write(da.arange(10, chunks=5), str(part), kind, ["prediction"])
    own = {"zarr": "zarr.json", "parquet": "part.000000.parquet"}

    def leftover(tag, stale, done=False, foreign=False):
        p = tmp_path / f".pred{suffix}.dk-tmp-{tag}" if kind != "npy" or done else \
            tmp_path / f".pred{suffix}.dk-tmp-{tag}.npy"
        if kind == "npy":
            p.write_bytes(part.read_bytes())
        else:
            p.mkdir()
            (p / own[kind]).write_bytes((part / own[kind]).read_bytes())
            if done:
                (p / _owned.MARKER).write_text("{}")
            if foreign:
                (p / "notes.txt").write_text("mine")
        if stale:
            _age(str(p), 3600)  # an hour: a run writing would have touched it since
        return p

    killed = leftover("0000000a", stale=True)
    running = leftover("0000000b", stale=False)  # another run still writing: left alone
    finished = leftover("0000000c", stale=True, done=True)  # results a failed publish kept for the user
    others = [running, finished] + ([leftover("0000000d", stale=True, foreign=True)] if kind != "npy" else [])
    predict.write(da.arange(10, chunks=5), str(out), kind, ["prediction"])
    assert not killed.exists() and all(p.exists() for p in others)
    assert out.exists()
