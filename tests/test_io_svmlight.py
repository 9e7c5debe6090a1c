"""svmlight/LIBSVM byte-range reader: format corners, partition invariance, error locations."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from dask_kernels.io import SvmlightFormatError, read_svmlight

CORNERS = (
    b"# a header comment\r\n"
    b"1 qid:7 3:1.5 1:2.0  # unsorted indices, trailing comment\r\n"
    b"\r\n"
    b"   \r\n"
    b"-1 qid:7 2:0.5\r\n"
    b"# another comment\n"
    b"0.5 qid:8 4:-3e2 2:1\n"
    b"2 qid:8\n"  # a row without features
    b"3 qid:9 1:4"  # no final newline
)
EXPECTED = np.array([[2.0, 0, 1.5, 0], [0, 0.5, 0, 0], [0, 1, 0, -300], [0, 0, 0, 0], [4, 0, 0, 0]])


def _write(tmp_path, data, name="d.svm"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


@pytest.mark.parametrize("blocksize", [1, 7, 16, 40, 10**6])
def test_corners_any_blocksize(tmp_path, blocksize):
    src = read_svmlight(_write(tmp_path, CORNERS), blocksize=blocksize)
    X, y, q = src.compute()
    assert src.shape == (5, 4) and sum(src.row_counts) == 5
    assert np.array_equal(X.toarray(), EXPECTED)
    assert X.has_sorted_indices
    assert y.tolist() == [1, -1, 0.5, 2, 3]
    assert q.tolist() == [7, 7, 8, 8, 9]
    assert np.array_equal(src.labels.compute(), y) and np.array_equal(src.qid.compute(), q)


def test_declared_dimension_and_zero_based(tmp_path):
    p = _write(tmp_path, b"1 0:1 2:3\n0 1:2\n")
    X, _, q = read_svmlight(p, n_features=5, zero_based=True).compute()
    assert X.shape == (2, 5) and q is None
    assert np.array_equal(X.toarray(), [[1, 0, 3, 0, 0], [0, 2, 0, 0, 0]])


def test_matches_scikit_learn(tmp_path):
    rng = np.random.default_rng(0)
    A = sp.random(300, 50, density=0.1, format="csr", random_state=1)
    y = rng.integers(0, 3, 300).astype(float)
    p = str(tmp_path / "r.svm")
    dump_svmlight_file(A, y, p, zero_based=False)
    X_ref, y_ref = load_svmlight_file(p, n_features=50, zero_based=False)
    src = read_svmlight(p, blocksize=997)
    assert src.n_partitions > 5
    X, yy, _ = src.compute()
    assert X.shape == load_svmlight_file(p, zero_based=False)[0].shape  # dimension = largest index found
    X50, _, _ = read_svmlight(p, n_features=50, blocksize=997).compute()
    assert np.array_equal(X50.toarray(), X_ref.toarray()) and np.array_equal(yy, y_ref)


def _error(tmp_path, data, **kw):
    with pytest.raises(SvmlightFormatError) as e:
        read_svmlight(_write(tmp_path, data), **kw).compute()
    return str(e.value)


LINES = [b"# comment\n", b"1 1:1\n", b"\n", b"2 2:2\n", b"3 3:3\n"]


@pytest.mark.parametrize("n_features", [None, 10])
@pytest.mark.parametrize("blocksize", [5, 10**6])
def test_malformed_line_names_offset_line_and_row(tmp_path, n_features, blocksize):
    bad = b"4 1:2 2:x\n"
    data = b"".join(LINES) + bad + b"5 1:1\n"
    msg = _error(tmp_path, data, n_features=n_features, blocksize=blocksize)
    offset = len(b"".join(LINES))
    assert f"line 6 (row 3), byte offset {offset}" in msg, msg
    assert "'2:x'" in msg and "d.svm" in msg


def test_bad_label_and_missing_colon(tmp_path):
    assert "label 'abc'" in _error(tmp_path, b"1 1:1\nabc 1:2\n")
    assert "line 2 (row 1)" in _error(tmp_path, b"1 1:1\n1 3\n")


def test_row_wider_than_declared_dimension(tmp_path):
    msg = _error(tmp_path, b"1 1:1\n\n1 2:1 9:1\n", n_features=4, blocksize=3)
    assert "feature index 9 is beyond the declared dimension n_features=4" in msg
    assert "line 3 (row 1), byte offset 7" in msg


def test_duplicate_index_is_an_error(tmp_path):
    msg = _error(tmp_path, b"1 1:1\n1 2:1 3:1 2:5\n")
    assert "feature index 2 appears twice" in msg and "line 2 (row 1)" in msg


def test_index_zero_in_one_based_file(tmp_path):
    assert "below 1" in _error(tmp_path, b"1 0:1\n")


def test_empty_file_and_nan_values(tmp_path):
    src = read_svmlight(_write(tmp_path, b"# nothing\n", "e.svm"), n_features=3)
    assert src.shape == (0, 3)
    X, _, _ = read_svmlight(_write(tmp_path, b"1 1:nan\n")).compute()
    assert np.isnan(X.data[0])  # parsed; the pipeline rejects it naming the row


def test_fingerprint_changes_with_file(tmp_path):
    p = _write(tmp_path, b"1 1:1\n")
    a = read_svmlight(p)
    (tmp_path / "d.svm").write_bytes(b"1 1:1\n2 1:2\n")
    b = read_svmlight(p)
    assert a.fingerprint != b.fingerprint and a.name != b.name


def test_fsspec_url(tmp_path):
    p = _write(tmp_path, CORNERS)
    X, y, _ = read_svmlight("file://" + p, blocksize=16).compute()
    assert np.array_equal(X.toarray(), EXPECTED) and y.tolist() == [1, -1, 0.5, 2, 3]
