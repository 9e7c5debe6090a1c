"""Checkpoints, saved models' arrays and feature-map sidecars are written by one writer
(dask_kernels/_npz.py): a write that fails leaves the previous file and no temporary file, a
finished one is on disk (fsync) before it is renamed into place."""

import os

import numpy as np
import pytest

import dask_kernels.maps.base  # noqa: F401  (the package's import order)
from dask_kernels import _npz
from dask_kernels.sidecar import write_npz


def _failing_savez(monkeypatch):
    """An array write that writes part of the file, then fails (a full disk)."""
    def write_array(fp, *args, **kwds):
        fp.write(b"\x93NUMPY part of an array")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np.lib.format, "write_array", write_array)


@pytest.mark.parametrize("write", ["sidecar", "checkpoint"])
def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch, write):
    path = tmp_path / "arrays.npz"
    old = {"landmarks": np.arange(6.0).reshape(2, 3)}
    if write == "sidecar":
        write_npz(path, old)
    else:
        _npz.save_npz(path, old, {"format": "x"})
    before = path.read_bytes()
    _failing_savez(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        if write == "sidecar":
            write_npz(path, {"landmarks": np.ones((2, 3))})
        else:
            _npz.save_npz(path, {"landmarks": np.ones((2, 3))}, {"format": "x"})
    assert sorted(os.listdir(tmp_path)) == ["arrays.npz"]  # no temporary file left behind
    assert path.read_bytes() == before


def test_a_sidecar_write_is_synced_before_the_rename(tmp_path, monkeypatch):
    synced, renamed = [], []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(len(renamed)) or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: renamed.append(b) or real_replace(a, b))
    write_npz(tmp_path / "s.npz", {"a": np.zeros(3)})
    assert synced == [0] and [os.path.basename(p) for p in renamed] == ["s.npz"]
