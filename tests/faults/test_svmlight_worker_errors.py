"""A malformed svmlight line found by a worker process reaches the driver as the file/line error
(the scan's range-local error crosses the network: it must survive pickling)."""

import pickle

import pytest
from distributed import Client, LocalCluster

from dask_kernels.io import SvmlightFormatError, read_svmlight
from dask_kernels.io.svmlight import _LocalError


def test_local_error_survives_pickling():
    e = pickle.loads(pickle.dumps(_LocalError("bad value", 3, 2, 40, "1 1:x")))
    assert (e.what, e.line, e.row, e.offset, e.text) == ("bad value", 3, 2, 40, "1 1:x")


def test_malformed_line_under_a_process_cluster(tmp_path):
    p = tmp_path / "d.svm"
    p.write_bytes(b"1 1:1\n0 2:2\n1 3:oops\n0 1:4\n")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, \
            Client(lc):
        with pytest.raises(SvmlightFormatError, match=r"d\.svm: line 3 \(row 2\)"):
            read_svmlight(str(p), blocksize=8).compute()  # no n_features: the scan parses on a worker
