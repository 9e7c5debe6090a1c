"""svmlight/LIBSVM byte-range reader: format corners, partition invariance, error locations."""

from decimal import Context, Decimal

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


def test_empty_file(tmp_path):
    src = read_svmlight(_write(tmp_path, b"# nothing\n", "e.svm"), n_features=3)
    assert src.shape == (0, 3)


# a decimal that looks finite but is infinite: 10**(1000000 - 100000); a scanner that caps the
# exponent at 100000 reads it as 1e0
INF_IN_DISGUISE = b"0." + b"0" * 99999 + b"1e1000000"


@pytest.mark.parametrize("token", [b"nan", b"-inf", b"Infinity", b"1e400", b"-1.8e308", INF_IN_DISGUISE])
@pytest.mark.parametrize("where", ["value", "label"])
@pytest.mark.parametrize("split", [False, True])
def test_non_finite_number_is_refused_naming_line_and_offset(tmp_path, token, where, split):
    assert not np.isfinite(float(token))
    bad = b"1 3:" + token if where == "value" else token + b" 3:1"
    data = b"1 1:1\n# c\n" + bad + b"\n2 2:2\n"
    blocksize = (8 if len(data) < 100 else len(data) // 4) if split else 10**7  # several ranges, or one
    for n_features in (None, 5):
        msg = _error(tmp_path, data, n_features=n_features, blocksize=blocksize)
        assert "d.svm: line 3 (row 1), byte offset 10:" in msg and "not finite" in msg, msg[:300]
        assert len(msg) < 600  # a megabyte-long number is not copied into the message


@pytest.mark.parametrize("line, what", [
    (b"1 qid:9223372036854775808 2:1", "query id 9223372036854775808 is out of range"),
    (b"1 qid:-9223372036854775809 2:1", "query id -9223372036854775809 is out of range"),
    (b"1 9223372036854775808:1", "feature index 9223372036854775808 is out of range"),
    (b"1 2:1 123456789012345678901234567890:1", "feature index 123456789012345678901234567890 is out of range"),
])
def test_integer_out_of_int64_names_line_and_offset(tmp_path, line, what):
    msg = _error(tmp_path, b"1 1:1\n" + line + b"\n")
    assert "d.svm: line 2 (row 1), byte offset 6:" in msg and what in msg, msg


def test_largest_integers_are_read(tmp_path):
    p = _write(tmp_path, b"1 qid:-9223372036854775808 9223372036854775807:1\n2 qid:9223372036854775807 1:2\n")
    src = read_svmlight(p)
    assert src.shape == (2, 2**63 - 1)
    assert src.qid.compute().tolist() == [-(2**63), 2**63 - 1]


# -- exact conversion: every token the scanner takes converts as Python's float ---------------
EXACT = Context(prec=2000)  # exact sums of doubles (at most ~770 significant digits)


def _adversarial_tokens(rng, n):
    """Decimals where a fast conversion goes wrong: long mantissas, halfway cases, huge and
    tiny exponents (with mantissas that shift them back), subnormals, leading zeros."""
    fixed = ["0", "-0", "-0.0", "+0e999999999", "1e-400", "-1e-400", "4.9e-324", "2.4703282292062327e-324",
             "2.4703282292062328e-324", "2.2250738585072011e-308", "2.2250738585072014e-308",
             "1.7976931348623157e308", "1.7976931348623158e308", "9007199254740993", "9007199254740992.5",
             "9007199254740993.0000000000000000000001", "1e22", "1e23", "8.98846567431158e307",
             "0." + "0" * 99999 + "1e100000", "1" + "0" * 400 + "e-400", "0." + "0" * 400 + "1e401",
             "1e99999", "1e100000", "0.1e-100001", "123456789012345678901234567890e-30",
             "7.1e-10", "1.00000000000000011102230246251565404236316680908203125",
             "1.00000000000000011102230246251565404236316680908203124",
             "1.00000000000000011102230246251565404236316680908203126"]
    out = list(fixed)
    digits = np.array(list("0123456789"))
    while len(out) < n:
        kind = rng.integers(6)
        if kind == 0:  # the exact decimal midpoint between two doubles (all its digits), or just off it
            v = float(rng.standard_normal() * 10.0 ** rng.integers(-320, 308))
            mid = EXACT.add(Decimal(v), EXACT.divide(Decimal(float(np.spacing(v))), 2))
            mant, _, exp = format(mid, "e").partition("e")
            out.append(mant + rng.choice(["", "0000", "0001", "9" * 30]) + "e" + exp)
            continue
        mant = "".join(rng.choice(digits, rng.integers(1, 60)))
        zeros = "0" * int(rng.integers(0, 30))
        point = rng.integers(0, len(mant) + 1)
        body = zeros + mant[:point] + "." + mant[point:]
        sign = rng.choice(["", "-", "+"])
        if kind == 1:
            out.append(sign + body)
        elif kind == 2:
            out.append(f"{sign}{body}e{rng.integers(-330, 330)}")
        elif kind == 3:  # exponent and leading/trailing zeros that cancel
            k = int(rng.integers(0, 200))
            out.append(f"{sign}0.{'0' * k}{mant}e{k + rng.integers(-25, 25)}")
        elif kind == 4:  # near the fast path's limits: 2**53, 10**22
            m = int(rng.integers(2**52, 2**54))
            out.append(f"{sign}{m}e{rng.integers(-24, 24)}")
        else:
            out.append(f"{sign}{mant}E{rng.choice(['+', '-', ''])}{rng.integers(0, 400)}")
    return out


@pytest.mark.parametrize("seed", range(4))
def test_every_accepted_number_converts_as_python_float(seed):
    from dask_kernels.io import _svmlight_scan

    rng = np.random.default_rng(seed)
    tokens = [t for t in _adversarial_tokens(rng, 3000) if np.isfinite(float(t))]
    doc = b"".join(f"{t} 1:{t} 2:-{t.lstrip('+-')}\n".encode() for t in tokens)
    fast = _svmlight_scan.parse(doc, None, False)
    assert fast is not None
    labels, values = fast[4][3], fast[4][1]
    for k, t in enumerate(tokens):
        want = np.float64(float(t)).view(np.uint64)
        assert labels[k].view(np.uint64) == want, t
        assert values[2 * k].view(np.uint64) == want, t
        assert values[2 * k + 1].view(np.uint64) == np.float64(-float(t.lstrip("+-"))).view(np.uint64), t


def test_infinite_decimals_leave_the_range_to_the_python_parser():
    from dask_kernels.io import _svmlight_scan

    rng = np.random.default_rng(99)
    for t in [t for t in _adversarial_tokens(rng, 3000) if not np.isfinite(float(t))] + [INF_IN_DISGUISE.decode()]:
        assert _svmlight_scan.parse(f"1 1:1\n1 2:{t}\n".encode(), None, False) is None, t[:80]


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


# -- the Numba fast path against the reference (pure-Python) parser ----------------------------
def _number_text(rng):
    """A decimal as people and programs write it: short, full repr, exponents, odd spellings."""
    kind = rng.integers(9)
    v = rng.standard_normal() * 10.0 ** rng.integers(-8, 9)
    if kind == 0:
        return repr(float(v))                       # up to 17 digits: often past 2**53
    if kind == 1:
        return f"{v:.6g}"
    if kind == 2:
        return f"{v:.{rng.integers(1, 25)}e}".replace("e", "eE"[rng.integers(2)])
    if kind == 3:
        return str(int(rng.integers(-10**6, 10**6)))
    if kind == 4:
        return rng.choice(["5.", ".5", "-.25", "+3", "-0", "0e5", "000123.4500", "1e22", "1e23", "9007199254740993"])
    if kind == 5:
        return "".join(rng.choice(list("0123456789"), rng.integers(18, 30))) + "." + "7" * int(rng.integers(0, 30))
    if kind == 6:
        return rng.choice(["4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "1e-400", "-1e-400",
                           "2.4703282292062327e-324", "123e-30"])
    if kind == 7:
        return f"{rng.random():.{rng.integers(1, 20)}f}"
    return f"{float(np.float32(v))!r}"


def _document(rng, n_lines, d):
    lines = []
    for _ in range(n_lines):
        kind = rng.integers(10)
        if kind == 0:
            lines.append(rng.choice(["", "   ", "# a comment", "\t# indented comment"]))
            continue
        cols = rng.choice(d, size=rng.integers(0, min(d, 12)), replace=False) + 1
        if kind == 1:
            cols = np.sort(cols)
        toks = [_number_text(rng)]
        if kind == 2:
            toks.append(f"qid:{rng.integers(-5, 10**6)}")
        toks += [f"{c}:{_number_text(rng)}" for c in cols]
        line = rng.choice([" ", "  ", "\t"]).join(toks)
        if kind == 3:
            line += " # trailing comment 1:2"
        lines.append(line + ("\r" if rng.random() < 0.2 else ""))
    text = "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")
    return text.encode()


def _same(fast, ref):
    assert fast[:4] == ref[:4]
    for a, b in zip(fast[4], ref[4]):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))  # -0.0 too


@pytest.mark.parametrize("seed", range(12))
def test_fast_path_equals_the_reference_parser_bitwise(seed):
    from dask_kernels.io import _svmlight_scan
    from dask_kernels.io.svmlight import _LocalError, _parse_python

    rng = np.random.default_rng(seed)
    doc = _document(rng, 300, 50)
    for n_features in (None, 50):
        fast = _svmlight_scan.parse(doc, n_features, False)
        assert fast is not None
        _same(fast, _parse_python(doc, 0, n_features, False, True))
    # the first pass's count (used when n_features is given) agrees with parsing
    assert _svmlight_scan.count(doc) == (fast[0], fast[1], fast[3])
    for cut in rng.integers(0, len(doc), 5):  # also on ranges that end anywhere
        try:
            ref = _parse_python(doc[:cut], 0, None, False, False)
        except _LocalError:
            continue  # cut inside a token: a bad last line
        assert _svmlight_scan.count(doc[:cut]) == (ref[0], ref[1], ref[3])


@pytest.mark.parametrize("line, accepted", [
    (b"1 3:1 3:2", False),               # repeated index
    (b"1 2:1 0:2", False),               # below the 1-based range
    (b"1 99:1", False),                  # beyond n_features
    (b"1 2:x", False), (b"1 2:", False), (b"1 :2", False), (b"1 2:3:4", False), (b"x 2:1", False),
    (b"1 qid:a 2:1", False), (b"1 2:1 qid:3", False), (b"1 2:1e", False), (b"1 2:1.2.3", False),
    (b"1 2:inf", False), (b"1 2:nan", False), (b"1 2:1e400", False), (b"nan 2:1", False),
    (b"1 2:1_0", True), (b"1 +2:1", True), (b"1 qid:+3 2:1", True),
    (b"1 2:" + b"1" * 40, True), (b"1 1234567890123456789:1", False),
])
def test_fast_path_leaves_every_other_decision_to_the_reference(line, accepted):
    from dask_kernels.io import _svmlight_scan
    from dask_kernels.io.svmlight import _LocalError, _parse, _parse_python

    doc = b"1 1:1\n" + line + b"\n"
    fast = _svmlight_scan.parse(doc, 50, False)
    if accepted:
        ref = _parse_python(doc, 0, 50, False, True)
        _same(_parse(doc, 0, 50, False, True), ref)
        if fast is not None:  # plain decimals the fast path takes itself
            _same(fast, ref)
    else:
        assert fast is None
        with pytest.raises(_LocalError) as err:
            _parse(doc, 0, 50, False, True)
        assert err.value.line == 1
