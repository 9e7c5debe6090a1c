"""The counter-based RNG: pinned values (the scheme cannot change silently), distributions,
independence across streams, indices and counters."""

import importlib
import os

import numpy as np
import pytest
from scipy import stats

from dask_kernels import RNG_SCHEME, rng

U = np.uint64
N = 40_000
# Kolmogorov-Smirnov critical value at alpha = 0.001: sqrt(-ln(alpha / 2) / 2) / sqrt(n).
KS_CRIT = np.sqrt(-np.log(0.0005) / 2) / np.sqrt(N)


def test_scheme_identifier():
    assert RNG_SCHEME == "dk-rng-1"


def test_known_answers():
    # Pinned outputs of dk-rng-1. If one of these changes, the features of every existing
    # store change: bump RNG_SCHEME instead of editing these numbers.
    assert rng.rank(0, 0, 0, 0) == 10375519022487590983
    assert rng.rank(42, 1, 2**40, 7) == 15823943941270311396
    assert rng.rank(U(2**64 - 1), 5, 3, 0) == 11015271281480457130
    assert rng.uniform(0, 0, 0, 0) == 0.5624580132422862
    assert rng.uniform(7, 3, 11, 2) == 0.5657972839107056
    assert rng.normal(7, 3, 11, 2) == -0.6083349290256012
    assert rng.gamma2(7, 3, 11, 2) == 4.418770327550401
    h = U(0x0123456789ABCDEF)
    assert float(rng.unit32(h)) == 0.5377777218818665
    assert float(rng.unit32_hi(h)) == 0.004444420337677002
    assert float(rng.gamma2_f32(h)) == 6.036416053771973


def test_pure_function_of_its_arguments():
    idx = np.arange(100, dtype=np.uint64)
    cnt = np.arange(5, dtype=np.uint64)
    a = rng.uniform_array(3, 1, idx, cnt)
    b = rng.uniform_array(3, 1, idx[::-1].copy(), cnt)[::-1]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, rng.uniform_array(4, 1, idx, cnt))


def _sample(fn, seed=11, stream=2):
    return fn(seed, stream, np.arange(N // 4, dtype=np.uint64), np.arange(4, dtype=np.uint64)).ravel()


@pytest.mark.parametrize(
    "fn, dist",
    [
        (rng.uniform_array, stats.uniform()),
        (rng.normal_array, stats.norm()),
        (rng.gamma2_array, stats.gamma(2)),
    ],
)
def test_distributions_ks(fn, dist):
    x = _sample(fn)
    assert stats.kstest(x, dist.cdf).statistic < KS_CRIT


def test_uniform_open_interval_and_float32_variants():
    h = rng.rank_array(5, 0, np.arange(N, dtype=np.uint64), np.zeros(1, dtype=np.uint64)).ravel()
    u_lo = np.array([rng.unit32(v) for v in h[:N]], dtype=np.float64)
    u_hi = np.array([rng.unit32_hi(v) for v in h[:N]], dtype=np.float64)
    g = np.array([rng.gamma2_f32(v) for v in h[:N]], dtype=np.float64)
    for u in (u_lo, u_hi):
        assert 0 < u.min() and u.max() < 1
        assert stats.kstest(u, "uniform").statistic < KS_CRIT
    assert stats.kstest(g, stats.gamma(2).cdf).statistic < KS_CRIT
    # the two halves of one word are independent
    assert abs(np.corrcoef(u_lo, u_hi)[0, 1]) < 4.5 / np.sqrt(N)
    assert rng.unit32(U(0)) > 0 and rng.unit32(U(2**64 - 1)) < 1
    assert rng.unit64(U(0)) > 0 and rng.unit64(U(2**64 - 1)) < 1


def test_rank_bits_uniform():
    r = rng.rank_array(1, 9, np.arange(N, dtype=np.uint64), np.arange(1, dtype=np.uint64)).ravel()
    for shift in (0, 21, 42, 60):
        nibble = ((r >> np.uint64(shift)) & np.uint64(15)).astype(int)
        counts = np.bincount(nibble, minlength=16)
        assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize(
    "other",
    [
        lambda: rng.uniform_array(11, 3, np.arange(N, dtype=np.uint64), np.zeros(1, np.uint64)),  # next stream
        lambda: rng.uniform_array(11, 2, np.arange(1, N + 1, dtype=np.uint64), np.zeros(1, np.uint64)),  # next index
        lambda: rng.uniform_array(11, 2, np.arange(N, dtype=np.uint64), np.ones(1, np.uint64)),  # next counter
        lambda: rng.uniform_array(12, 2, np.arange(N, dtype=np.uint64), np.zeros(1, np.uint64)),  # next seed
    ],
)
def test_independence(other):
    base = rng.uniform_array(11, 2, np.arange(N, dtype=np.uint64), np.zeros(1, np.uint64)).ravel()
    x = other().ravel()
    # correlation of independent uniforms is N(0, 1/n); 4.5 sigma
    assert abs(np.corrcoef(base, x)[0, 1]) < 4.5 / np.sqrt(N)
    # joint histogram on a 10 x 10 grid is uniform
    counts = np.histogram2d(base, x, bins=10, range=[[0, 1], [0, 1]])[0].ravel()
    assert stats.chisquare(counts).pvalue > 1e-3


def test_log32_accuracy():
    x = np.concatenate(
        [
            np.geomspace(1e-37, 1e37, 200_001),
            np.random.default_rng(0).uniform(0.5, 2.0, 100_000),
            [1.0, 2.0, 0.5, np.sqrt(0.5)],
        ]
    ).astype(np.float32)
    got = np.array([rng.log32(v) for v in x[::97]], dtype=np.float64)
    ref = np.log(x[::97].astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - ref) / ulp) <= 2.0
    assert rng.log32(np.float32(1.0)) == 0.0


# The stream ids the maps draw from. Pinned: a changed id changes what every spec produces.
STREAMS = {
    1: "gcws.icws", 2: "gcws.dart",
    21: "rff.gaussian", 22: "rff.cauchy", 23: "rff.phase", 24: "rff.support",
    31: "nrff.normal", 32: "nrff.phase",
    41: "fastfood.sign", 42: "fastfood.permutation", 43: "fastfood.gaussian", 44: "fastfood.scale",
    45: "fastfood.phase", 46: "fastfood.radius", 47: "fastfood.bartlett",
    51: "nystroem.landmark", 52: "nystroem.kmeans",
    61: "core.rank", 62: "core.projection",
    71: "select.rows",
    81: "similarity.band",
}


def _stream_modules():
    """Every module of the package that registers a stream (when it is imported): the maps, and
    others (``select`` draws rows from one), found in the source rather than listed here."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(rng.__file__)))
    for folder, _, files in os.walk(os.path.join(root, "dask_kernels")):
        for f in sorted(files):
            path = os.path.join(folder, f)
            if f.endswith(".py") and f != "rng.py" and "register_stream(" in open(path).read():
                yield os.path.relpath(path, root)[:-3].replace(os.sep, ".")


def test_stream_ids_are_pinned():
    # streams are registered by their modules' imports: import them all, whatever other tests
    # (run before this one, or not) happened to import
    modules = list(_stream_modules())
    assert {"dask_kernels.maps.rff", "dask_kernels.select"} <= set(modules)
    for name in modules:
        importlib.import_module(name)
    got = rng.registered_streams()
    assert {s: got[s] for s in STREAMS} == STREAMS
    # any new stream must be added above, with an id no one used before
    assert set(got) == set(STREAMS), sorted(set(got) - set(STREAMS))


def test_registering_a_used_stream_id_is_an_import_time_error(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="stream 21 is already registered to 'rff.gaussian'"):
        rng.register_stream("mine.normal", 21)
    with pytest.raises(ValueError, match="'rff.phase' is already registered with id 23"):
        rng.register_stream("rff.phase", 99)
    for bad in (-1, 2**64, 1.5, True, "3"):
        with pytest.raises(ValueError, match="must be an integer"):
            rng.register_stream("mine.bad", bad)
    assert rng.register_stream("rff.phase", 23) == 23  # the same claim again (a module reload)
    # a map module that claims a used id fails to import
    (tmp_path / "clashing_map.py").write_text(
        "from dask_kernels.rng import register_stream\nSTREAM = register_stream('clash.r', 1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="stream 1 is already registered to 'gcws.icws'"):
        __import__("clashing_map")
    assert "clash.r" not in rng.registered_streams().values()
    # a free id is taken and can be released
    assert rng.register_stream("test.free", 999_999) == 999_999
    rng.unregister_stream(999_999)
    assert 999_999 not in rng.registered_streams()
