"""Parameters that would cost more than the stated bounds (dask_kernels.maps._bounds) are refused
before the work, naming the parameter, its value and the bound.

Before: GCWS, RFF, NRFF, Fastfood and Nystroem accepted ``n_components=10**12`` from a
constructor, a spec or ``--param`` and failed only inside an allocation of terabytes (the
command line after creating a 10**12-wide store); a 15-byte svmlight file whose index is 2**31
made NRFF allocate a 256 GiB projection matrix; Fastfood on input 2**24 wide ran for minutes on
two rows. The refusals take milliseconds (a command line's, the time to import the maps):
nothing of that size is started.
"""

import time

import numpy as np
import pytest
import scipy.sparse as sp

from _cli import one_line_error
from dask_kernels import GCWS, NRFF, RFF, CoRE, Fastfood, Nystroem, featurize, from_spec
from dask_kernels.cli import main
from dask_kernels.io import read_svmlight
from dask_kernels.maps._bounds import MAX_COMPONENTS, MAX_LANDMARKS, MAX_PADDED_DIM, MAX_TABLE_BYTES

HUGE = 10**12
FAST = 1.0  # seconds: a refusal does no work of the refused size
CLI_FAST = 5.0  # seconds for a command refused before it starts a cluster (the first one imports the maps)
UNBOUNDED_BEFORE = [GCWS, RFF, NRFF, Fastfood, Nystroem]
#: 15 bytes: label 1, feature 2**31 (one-based) = 1, so the input is 2**31 columns wide
SVMLIGHT_2_31 = b"1 2147483648:1\n"


def _bound(cls):
    return MAX_LANDMARKS if cls is Nystroem else MAX_COMPONENTS


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("bounds")
    np.save(d / "X.npy", np.random.default_rng(0).random((8, 3)))
    (d / "wide.svm").write_bytes(SVMLIGHT_2_31)
    return d


def _timed_refusal(fn, match):
    t = time.perf_counter()
    with pytest.raises(ValueError, match=match) as info:
        fn()
    assert time.perf_counter() - t < FAST
    return str(info.value)


def _user_folder(tmp_path):
    """A user's folder, to be named as the output: it must survive a refusal untouched."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    return mine


def _assert_untouched(mine):
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep"


# -- n_components: constructor, spec, --param --------------------------------------------------
@pytest.mark.parametrize("cls", UNBOUNDED_BEFORE)
def test_constructor_n_components_beyond_the_bound_is_refused_by_fit(cls):
    message = _timed_refusal(lambda: cls(n_components=HUGE).fit(np.ones((2, 3))), "n_components")
    assert f"{_bound(cls)}" in message and f"{HUGE}" in message, message
    if cls is not Fastfood:  # (Fastfood's fit builds its tables: 2**20 features take seconds)
        cls(n_components=_bound(cls)).fit(np.ones((2, 3)))  # the bound itself is accepted


@pytest.mark.parametrize("cls", UNBOUNDED_BEFORE + [CoRE])
def test_spec_n_components_beyond_the_bound_is_refused(cls):
    spec = cls(n_components=4).fit(np.ones((2, 3))).spec()
    spec["params"]["n_components"] = HUGE
    message = _timed_refusal(lambda: from_spec(spec), r"spec\['params'\]\['n_components'\]")
    assert f"{_bound(cls)}" in message, message


@pytest.mark.parametrize("method", ["gcws", "nrff", "fastfood"])
def test_param_n_components_beyond_the_bound_is_one_line_and_leaves_nothing(small, tmp_path, capsys, method):
    out = tmp_path / "out.zarr"
    mine = _user_folder(tmp_path)
    for target in (out, mine):
        t = time.perf_counter()
        line = one_line_error(capsys, ["featurize", str(small / "X.npy"), str(target), "--method", method,
                                       "--param", f"n_components={HUGE}"])
        assert time.perf_counter() - t < CLI_FAST
        assert "--param" in line and "n_components" in line and f"{MAX_COMPONENTS}" in line, line
    line = one_line_error(capsys, ["featurize", str(small / "X.npy"), str(out), "--method", method,
                                   "--param", "n_components=10**12"])
    assert "n_components" in line and "'10**12'" in line, line  # (text, not an integer: refused as before)
    assert not out.exists()
    _assert_untouched(mine)


# -- input width x n_components: the 15-byte svmlight file ---------------------------------------
def test_nrff_on_an_svmlight_file_of_index_2_31_refuses_before_allocating(small, tmp_path):
    X = read_svmlight(str(small / "wide.svm"))
    assert X.shape == (1, 2**31)
    out = tmp_path / "out.zarr"
    message = _timed_refusal(lambda: featurize(X, NRFF(n_components=16), store=str(out), progress=False),
                             "n_features_in=2,147,483,648 x n_components=16")
    assert f"{MAX_TABLE_BYTES:,}" in message and "density" in message, message  # the bound, and what to do
    assert not out.exists()


@pytest.fixture(scope="module")
def scheduler():
    """An in-process scheduler and worker on tcp: the command line connects to it at once."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=":0") as lc:
        yield lc.scheduler_address


def test_featurize_cli_on_the_15_byte_file_is_one_line_and_leaves_nothing(small, tmp_path, capsys, scheduler):
    out = tmp_path / "out.zarr"
    mine = _user_folder(tmp_path)
    for target in (out, mine):
        line = one_line_error(capsys, ["featurize", str(small / "wide.svm"), str(target), "--method", "nrff",
                                       "--param", "n_components=16", "--scheduler", scheduler, "--no-progress"])
        assert "n_features_in=2,147,483,648 x n_components=16" in line, line
    assert not out.exists()
    _assert_untouched(mine)


def test_featurize_cli_refuses_a_stated_width_before_any_cluster(small, tmp_path, capsys):
    t = time.perf_counter()
    line = one_line_error(capsys, ["featurize", str(small / "wide.svm"), str(tmp_path / "o.zarr"), "--method",
                                   "nrff", "--n-features", str(2**31)])
    assert time.perf_counter() - t < CLI_FAST  # no LocalCluster was started
    assert "--n-features 2147483648" in line and "NRFF" in line, line
    assert not (tmp_path / "o.zarr").exists()


@pytest.mark.parametrize("cls", [NRFF, RFF])
def test_dense_projection_beyond_the_bound_is_refused_by_fit_and_spec(cls):
    d = MAX_TABLE_BYTES // 8 // 64 + 1  # 64 features of this width need just over the bound
    X = sp.csr_matrix((1, d))
    _timed_refusal(lambda: cls(n_components=64).fit(X), f"n_features_in={d:,} x n_components=64")
    cls(n_components=64).fit(sp.csr_matrix((1, d - 1)))  # at the bound: accepted (the matrix is built lazily)
    spec = cls(n_components=64).fit(np.ones((1, 3))).spec()
    spec["n_features_in"] = 2**31
    _timed_refusal(lambda: from_spec(spec), r"spec\['n_features_in'\]: .*n_features_in=2,147,483,648")


# -- Fastfood's padded width -------------------------------------------------------------------
def test_fastfood_on_input_2_24_wide_refuses_at_once():
    X = sp.csr_matrix(([1.0, 1.0], ([0, 1], [0, 2**24 - 1])), shape=(2, 2**24))
    message = _timed_refusal(lambda: Fastfood(n_components=8).fit_transform(X), "Fastfood: n_features_in=16,777,216")
    assert f"{MAX_PADDED_DIM:,}" in message and "RFF(density" in message, message
    spec = Fastfood(n_components=8).fit(np.ones((1, 3))).spec()
    spec["n_features_in"] = 2**24
    _timed_refusal(lambda: from_spec(spec), r"spec\['n_features_in'\]: Fastfood")
    assert Fastfood(n_components=8).fit(sp.csr_matrix((1, MAX_PADDED_DIM))).padded_dim_ == MAX_PADDED_DIM


def test_fastfood_feature_ids_scattered_over_many_blocks_are_refused():
    ids = np.arange(4) * 2**20  # four blocks of 2**20 features, each computed whole for every row
    X = sp.csr_matrix((2, 2**20))
    _timed_refusal(lambda: Fastfood(n_components=4, feature_ids=ids).fit_transform(X),
                   "feature_ids touch 4 blocks of 1,048,576 features")
    spec = Fastfood(n_components=4, feature_ids=ids).fit(np.ones((1, 3))).spec()  # blocks of 4 at width 3
    spec["n_features_in"] = 2**20
    _timed_refusal(lambda: from_spec(spec), r"spec\['n_features_in'\]: Fastfood: feature_ids touch 4 blocks")


# -- GCWS: a center, a forced table ------------------------------------------------------------
def test_gcws_center_and_forced_table_on_wide_input_are_refused():
    X = sp.csr_matrix(([1.0], ([0], [2**31 - 1])), shape=(1, 2**31))
    _timed_refusal(lambda: GCWS(center="mean").fit(X), "center='mean'")
    _timed_refusal(lambda: GCWS(table=True).fit(X), "table=True")
    assert GCWS().fit(X).transform(X).shape == (1, 256)  # the hash path needs no per-column memory


# -- SoftmaxSGD's bottleneck rank ------------------------------------------------------------------
def test_softmax_rank_beyond_its_bounds_is_refused_before_allocating():
    from _special_files import memory_cap

    from dask_kernels import SoftmaxSGD
    from dask_kernels.learn.softmax import MAX_RANK

    codes, y = np.zeros((4, 128), np.uint8), np.array([0, 1, 0, 1])
    _timed_refusal(lambda: SoftmaxSGD(code_bits=8, rank=HUGE).fit(codes, y), r"'rank'.*16384")
    with memory_cap(2**30):  # U would be 2**15 x 2**14 float64: 4 GiB
        message = _timed_refusal(lambda: SoftmaxSGD(code_bits=8, rank=MAX_RANK).fit(codes, y), "rank=16,384")
        assert "32,768" in message and f"{MAX_TABLE_BYTES:,}" in message, message
        _timed_refusal(lambda: SoftmaxSGD(code_bits=8, rank=MAX_RANK).partial_fit(codes, y, classes=[0, 1]),
                       "rank=16,384")
    SoftmaxSGD(code_bits=8, rank=64, max_iter=1).fit(codes, y)  # within the bound: trains


def test_softmax_full_weights_beyond_the_bound_are_refused_before_allocating():
    from _special_files import memory_cap

    from dask_kernels import SoftmaxSGD

    codes, y = np.zeros((4, 2048), np.uint8), np.arange(4)
    with memory_cap(2**30):  # W would be 2**19 features x 3,000 classes float64: 12.6 GB
        message = _timed_refusal(lambda: SoftmaxSGD(code_bits=8).partial_fit(codes, y, classes=np.arange(3000)),
                                 "3,000 classes")
        assert "12,582,912,000" in message and "rank=" in message, message
        message = _timed_refusal(  # 300 classes: 1.3 GB, within the bound once, not twice
            lambda: SoftmaxSGD(code_bits=8, average=True).partial_fit(codes, y, classes=np.arange(300)), "twice")
        assert "2,516,582,400" in message, message
    SoftmaxSGD(code_bits=8).partial_fit(codes, y, classes=np.arange(100))  # 420 MB: within the bound


@pytest.mark.parametrize("rank, says", [(100_000, "at most 16,384"), (16_384, "bytes, more than the bound")])
def test_train_rank_beyond_its_bounds_is_one_line_before_training(small, tmp_path, capsys, rank, says):
    from _special_files import memory_cap

    np.save(tmp_path / "y.npy", np.arange(8) % 2)
    t = time.perf_counter()
    with memory_cap(2**30):  # GCWS's 256 8-bit codes: U would be 2**16 x 16,384 float64, 8 GiB
        line = one_line_error(capsys, ["train", str(small / "X.npy"), "--labels", str(tmp_path / "y.npy"),
                                       "-o", str(tmp_path / "m"), "--rank", str(rank), "--no-progress"])
    assert time.perf_counter() - t < CLI_FAST and "rank" in line and says in line, line
    assert not (tmp_path / "m").exists()


# -- booleans are no integers ----------------------------------------------------------------------
@pytest.mark.parametrize("param, says", [("n_components=true", "NRFF's n_components takes no true/false"),
                                         ("gamma=false", "NRFF's gamma takes no true/false")])
def test_true_is_no_count_for_a_numeric_param(small, tmp_path, capsys, param, says):
    out = tmp_path / "out.zarr"
    line = one_line_error(capsys, ["featurize", str(small / "X.npy"), str(out), "--method", "nrff",
                                   "--param", param])
    assert f"--param {param}: {says}" in line, line
    assert not out.exists()


@pytest.mark.parametrize("estimator", ["sgd", "softmax", "multinomial-nb"])
def test_train_raw_on_input_of_legal_but_huge_width_is_one_line_before_training(tmp_path, capsys, estimator):
    """A 3-line svmlight file of index 1.5e9: `train --method raw` (SGDClassifier) allocated its
    12 GB of weights and more, killed by the kernel at 24 GB."""
    from _special_files import memory_cap

    wide = tmp_path / "wide.svm"
    wide.write_bytes(b"1 1:1 1500000000:1\n0 2:1\n1 3:1\n")
    t = time.perf_counter()
    with memory_cap(2**30):
        line = one_line_error(capsys, ["train", str(wide), "-o", str(tmp_path / "m.dk"), "--method", "raw",
                                       "--estimator", estimator, "--no-progress"])
    assert time.perf_counter() - t < 30
    assert line == (f"dask-kernels train: error: --estimator {estimator}: the learner sees 1,500,000,000 features, so "
                    "its weights take at least 12,000,000,000 bytes (float64), more than the bound of 2,147,483,648; "
                    "hash the input to fewer features (--method gcws, rff, ...)"), line
    assert not (tmp_path / "m.dk").exists()
    assert main(["train", str(wide), "-o", str(tmp_path / "m.dk"), "--no-progress"]) == 0  # hashed: trains


def test_svmlight_input_wider_than_2_31_is_one_line_naming_the_file(small, tmp_path, capsys):
    """A 20-byte file whose index is 10**11: featurize said only "X has 100000000000 features",
    train --method raw --estimator softmax ended in a MemoryError traceback (1.5 TiB of weights),
    and --estimator sgd in scikit-learn's "please report" message about int64 indices."""
    wide = tmp_path / "wider.svm"
    wide.write_bytes(b"1 1:1 100000000000:1\n0 2:1\n")
    says = f"{wide}: its largest feature index makes 100,000,000,000 columns, more than the 2,147,483,648"
    line = one_line_error(capsys, ["featurize", str(wide), str(tmp_path / "o.zarr"), "--no-progress"])
    assert line.startswith(f"dask-kernels featurize: error: input {says}"), line
    for estimator in ("softmax", "sgd"):
        line = one_line_error(capsys, ["train", str(wide), "-o", str(tmp_path / "m.dk"), "--method", "raw",
                                       "--estimator", estimator, "--no-progress"])
        assert line.startswith(f"dask-kernels train: error: source {says}"), line
    line = one_line_error(capsys, ["train", str(small / "wide.svm"), "-o", str(tmp_path / "m.dk"), "--method", "raw",
                                   "--n-features", str(2**31 + 1), "--no-progress"])
    assert line == "dask-kernels train: error: --n-features 2,147,483,649: more than the 2,147,483,648 columns " \
                   "(2**31) any map or model reads"
    assert not (tmp_path / "o.zarr").exists() and not (tmp_path / "m.dk").exists()
