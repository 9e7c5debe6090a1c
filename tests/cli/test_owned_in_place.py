"""Outputs written in place (URLs: object stores have no rename): the previous output is removed
before the new one is written only when it is the same command's, checked by its marker."""

import fsspec
import pytest

from dask_kernels.cli._args import UsageError
from dask_kernels.cli._owned import clear_in_place, write_marker


def _folder(url, marker_of=None):
    fs = fsspec.filesystem("memory")
    fs.pipe(url + "/part.0.parquet", b"pairs")
    if marker_of is not None:
        write_marker(url, "parquet", "command line", url, marker_of)
    return fs


def test_only_the_same_commands_output_is_removed_before_writing_in_place():
    fs = _folder("memory://dk-owned/pairs", "similar")
    clear_in_place("memory://dk-owned/pairs", "parquet", None, "similar")
    assert not fs.exists("memory://dk-owned/pairs")
    for url, marker_of in (("memory://dk-owned/mine", None), ("memory://dk-owned/predicted", "predict")):
        fs = _folder(url, marker_of)
        with pytest.raises(UsageError, match="not written by dask-kernels similar"):
            clear_in_place(url, "parquet", None, "similar")
        assert fs.exists(url + "/part.0.parquet")
    fs = _folder("memory://dk-owned/kept", "similar")
    clear_in_place("memory://dk-owned/kept", "parquet", False, "similar")  # not asked to replace: left alone
    assert fs.exists("memory://dk-owned/kept/part.0.parquet")
