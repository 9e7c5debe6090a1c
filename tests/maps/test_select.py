"""Random feature selection (May 2017, Algorithm 1): bookkeeping, that the weights pick useful
features, and that a selected map is an ordinary map (spec + sidecar, fresh process, cluster,
feature store, fit_incremental)."""

import os
import subprocess
import sys
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, SGDClassifier

from dask_kernels import GCWS, NRFF, RFF, Fastfood, featurize, fit_incremental, load_model, open_store, select_features
from dask_kernels.select import RandomFeatureSelector, round_rows
from dask_kernels.maps import load_map, save_map

RNG = np.random.default_rng(0)
X = RNG.normal(size=(600, 10))
Y = (np.sin(2 * X[:, 0]) > 0).astype(int) + 2 * (X[:, 1] > 0)  # 4 classes from inputs 0 and 1


@pytest.mark.parametrize("D, T", [(40, 4), (30, 7), (8, 1)])
def test_schedule_and_bookkeeping(D, T):
    sel = RandomFeatureSelector(RFF(gamma=0.5, seed=1), n_components=D, rounds=T, subset_rows=200).fit(X, Y)
    s = [round(t * D / T) for t in range(T + 1)]
    assert sel.n_generated_ == sum(D - s[t - 1] for t in range(1, T + 1))
    ids = sel.feature_ids_
    assert ids.size == D and np.all(np.diff(ids) > 0) and ids.max() < sel.n_generated_
    fmap = sel.feature_map_
    assert fmap.n_components == D and np.array_equal(fmap.feature_ids, ids) and fmap.n_features_in_ == 10
    assert np.array_equal(sel.transform(X), fmap.transform(X))
    again = select_features(RFF(gamma=0.5, seed=1), X, Y, n_components=D, rounds=T, subset_rows=200)
    assert np.array_equal(again.feature_ids, ids)  # a pure function of the seeds


class _FeaturesByClasses(SGDClassifier):
    """SGD whose coef_ is laid out (features, classes), like a softmax model's W."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
        self.coef_ = self.coef_.T.copy()
        return self


def test_estimator_weights_in_either_layout():
    kw = dict(n_components=24, rounds=3, subset_rows=200)
    a = RandomFeatureSelector(RFF(seed=6), estimator=SGDClassifier(random_state=0), **kw).fit(X, Y)
    b = RandomFeatureSelector(RFF(seed=6), estimator=_FeaturesByClasses(random_state=0), **kw).fit(X, Y)
    assert np.array_equal(a.feature_ids_, b.feature_ids_)
    c = RandomFeatureSelector(RFF(seed=6), **kw).fit(X, Y)  # the recipe's step size: another selection
    assert not np.array_equal(a.feature_ids_, c.feature_ids_)


def test_round_rows_are_seeded_subsets():
    a, b = round_rows(3, 1, 1000, 100), round_rows(3, 2, 1000, 100)
    assert a.size == 100 and np.unique(a).size == 100 and np.all(np.diff(a) > 0)
    assert np.array_equal(a, round_rows(3, 1, 1000, 100)) and not np.array_equal(a, b)
    assert np.array_equal(round_rows(3, 1, 50, 100), np.arange(50))


def test_weights_select_the_informative_inputs():
    # Sparse features with one input each (density 0.1 of d = 10): y depends on inputs 0 and 1
    # only, so 20 % of the candidates can be useful. Selection must keep far more of them.
    base = RFF(gamma=1.0, density=0.1, seed=2, dtype="float64")
    sel = RandomFeatureSelector(base, n_components=40, rounds=8, subset_rows=600, seed=1).fit(X, Y)
    support = sel.feature_map_.fit(X[:1])._tables()[0].idx[:, 0]
    useful = np.isin(support, [0, 1]).mean()
    # under no selection the count is Binomial(40, 0.2): mean 8, sd 2.5; 0.6 is 6.3 sd above it
    assert useful > 0.6, useful


def test_fastfood_selects_whole_blocks():
    sel = RandomFeatureSelector(Fastfood(gamma=0.5, seed=3), n_components=40, rounds=4, subset_rows=300).fit(X, Y)
    d = 16  # 10 inputs padded
    ids = sel.feature_ids_
    assert ids.size == 48  # 40 rounded up to 3 blocks
    blocks = ids.reshape(-1, d)
    assert np.all(blocks == blocks[:, :1] + np.arange(d)) and np.all(blocks[:, 0] % d == 0)
    assert sel.feature_map_._subset_tables()[1] is None  # no gather: whole blocks in order


@pytest.mark.parametrize("cls", [RFF, NRFF])
def test_dask_input_selects_the_same_ids(cls):
    a = select_features(cls(gamma=0.5, seed=4), X, Y, n_components=20, rounds=3, subset_rows=150)
    b = select_features(cls(gamma=0.5, seed=4), da.from_array(X, chunks=97), da.from_array(Y, chunks=97),
                        n_components=20, rounds=3, subset_rows=150)
    assert np.array_equal(a.feature_ids, b.feature_ids)


def test_dask_rows_of_several_rounds_are_read_in_one_pass(monkeypatch):
    import dask_kernels.select as select

    Xd, yd = da.from_array(X, chunks=97), da.from_array(Y, chunks=97)
    ref = RandomFeatureSelector(RFF(seed=4), n_components=20, rounds=6, subset_rows=150).fit(X, Y)
    one = RandomFeatureSelector(RFF(seed=4), n_components=20, rounds=6, subset_rows=150).fit(Xd, yd)
    assert one.n_data_passes_ == 1 and ref.n_data_passes_ == 0
    monkeypatch.setattr(select, "GATHER_BYTES", 300 * 10 * 8)  # about two rounds' rows per pass
    few = RandomFeatureSelector(RFF(seed=4), n_components=20, rounds=6, subset_rows=150).fit(Xd, yd)
    assert 3 <= few.n_data_passes_ <= 6
    assert np.array_equal(few.feature_ids_, ref.feature_ids_) and np.array_equal(one.feature_ids_, ref.feature_ids_)


def test_bad_inputs():
    with pytest.raises(ValueError, match="feature_map must be one of"):
        RandomFeatureSelector(GCWS(), n_components=4).fit(np.abs(X), Y)
    with pytest.raises(ValueError, match="X has 600 rows, y has 599"):
        RandomFeatureSelector(RFF(), n_components=4).fit(X, Y[:-1])
    with pytest.raises(ValueError, match="1 class"):
        RandomFeatureSelector(RFF(), n_components=4).fit(X, np.zeros(600))
    from sklearn.naive_bayes import GaussianNB

    with pytest.raises(ValueError, match=r"estimator GaussianNB: coef_ of shape \(1, 0\)"):
        RandomFeatureSelector(RFF(), n_components=4, estimator=GaussianNB()).fit(X, Y)
    with pytest.raises(ValueError, match="rounds"):
        RandomFeatureSelector(RFF(), n_components=4, rounds=0).fit(X, Y)


def test_bad_shapes_are_refused_before_any_round():
    sel = RandomFeatureSelector(RFF(), n_components=4)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        sel.fit(X[:, 0], Y)
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 10\)\)"):
        sel.fit(X[:0], Y[:0])
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(600, 0\)\)"):
        sel.fit(X[:, :0], Y)
    with pytest.raises(ValueError, match="requires y to be passed"):
        sel.fit(X, None)
    with pytest.raises(ValueError, match="y should be a 1d array"):
        sel.fit(X, np.stack([Y, Y], axis=1))
    # Dask input: checked without reading it
    with pytest.raises(ValueError, match=r"expected 2-d rows .* got a Dask array of shape \(600,\)"):
        sel.fit(da.from_array(X[:, 0], chunks=100), Y)
    with pytest.raises(ValueError, match="selection needs at least one row and one feature"):
        sel.fit(da.from_array(X, chunks=(100, 5))[da.from_array(Y, chunks=100) > 0], Y)  # unknown rows
    with pytest.raises(ValueError, match=r"y must be 1-d .* shape \(600, 2\)"):
        sel.fit(da.from_array(X, chunks=(100, 5)), da.from_array(np.stack([Y, Y], axis=1), chunks=(100, 2)))


@pytest.fixture(scope="module")
def selected():
    # more than 256 ids: the ids live in the sidecar
    return select_features(RFF(gamma=0.5, seed=5), X, Y, n_components=300, rounds=3, subset_rows=300)


def test_selected_map_in_a_fresh_process(selected, tmp_path):
    assert selected.spec()["params"]["feature_ids"] == "sidecar"
    path = save_map(selected, tmp_path / "sel.json")
    np.save(tmp_path / "X.npy", X)
    code = ("import sys, numpy as np; from dask_kernels.maps import load_map; "
            "np.save(sys.argv[2], load_map(sys.argv[1]).transform(np.load(sys.argv[3])))")
    subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "Z.npy"), str(tmp_path / "X.npy")],
                   check=True, env=dict(os.environ))
    assert np.array_equal(np.load(tmp_path / "Z.npy"), selected.transform(X))
    assert np.array_equal(load_map(path).feature_ids, selected.feature_ids)


def test_selected_map_in_a_store_on_a_cluster_and_in_training(selected, tmp_path):
    from distributed import Client, LocalCluster

    ref = selected.transform(X)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster):
        featurize(da.from_array(X, chunks=150), selected, labels=Y, store=str(tmp_path / "s.zarr"), progress=False)
    fs = open_store(str(tmp_path / "s.zarr"))
    # BLAS rounding may depend on the block shape (RFF's documented tolerance, |w.x + b| < 30 here)
    np.testing.assert_allclose(fs.features.compute(), ref, rtol=0, atol=1e-5 * 31 * np.sqrt(2 / 300))
    rebuilt = fs.feature_map
    assert rebuilt.spec_json() == selected.spec_json()
    assert np.array_equal(rebuilt.transform(X), ref)
    clf = SGDClassifier(loss="log_loss", random_state=0)
    model = fit_incremental(clf, X, Y, feature_map=selected, epochs=1, progress=False, block_rows=200)
    assert clf.coef_.shape == (4, 300)
    model.save(str(tmp_path / "model"))
    assert os.path.exists(tmp_path / "model" / "feature_map.npz")  # the ids, beside the model's spec
    loaded = load_model(str(tmp_path / "model"))
    assert np.array_equal(loaded.feature_map.feature_ids, selected.feature_ids)
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_the_softmax_learner_selects_like_the_recipe():
    # the thesis selects with its softmax model: SoftmaxSGD's weights (classes x features) rank
    # the candidates as the OvR recipe's do, and keep the informative inputs (see the test above)
    from dask_kernels import SoftmaxSGD

    base = RFF(gamma=1.0, density=0.1, seed=2, dtype="float64")
    sel = RandomFeatureSelector(base, n_components=40, rounds=8, subset_rows=600, seed=1,
                                estimator=SoftmaxSGD(eta0=0.1, random_state=0)).fit(X, Y)
    assert sel.feature_ids_.size == 40
    support = sel.feature_map_.fit(X[:1])._tables()[0].idx[:, 0]
    assert np.isin(support, [0, 1]).mean() > 0.6  # Binomial(40, 0.2) without selection: 6.3 sd below


# Inputs 0 and 1 decide the class, on scales and offsets far apart: a map sees them only through
# the scaling (and gamma) it learned from the rows.
SPREAD = X * np.logspace(-2, 3, 10) + np.linspace(-500, 500, 10)


@pytest.mark.parametrize("params", [dict(scale="auto", gamma=0.05), dict(gamma="scale"),
                                    dict(scale="auto", gamma="scale")])
@pytest.mark.parametrize("lazy", [False, True])
def test_learned_state_comes_from_all_rows(params, lazy):
    # The state a map learns in fit (scale, gamma="scale") is learned once from all training
    # rows, as featurize and fit_incremental learn it, not from the first row or one round's rows.
    rows = da.from_array(SPREAD, chunks=150) if lazy else SPREAD
    fmap = select_features(RFF(seed=4, **params), rows, Y, n_components=30, rounds=3, subset_rows=200)
    whole = RFF(seed=4, n_components=30, feature_ids=fmap.feature_ids, **params).fit(SPREAD)
    assert fmap.spec() == whole.spec()
    assert np.array_equal(fmap.transform(SPREAD), whole.transform(SPREAD))


@pytest.mark.parametrize("gamma", [0.5, "scale"])
def test_selection_with_learned_scale_finds_the_signal(gamma):
    # The features are selected and used on the scaling of all rows: on the first row's
    # (min == max) every input looked constant and the model scored at chance.
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0)
    sel = RandomFeatureSelector(RFF(seed=5, scale="auto", gamma=gamma, dtype="float64"), n_components=60,
                                rounds=4, subset_rows=400, seed=2).fit(SPREAD[:400], y[:400])
    clf = LogisticRegression(C=10, max_iter=2000).fit(sel.transform(SPREAD[:400]), y[:400])
    assert clf.score(sel.transform(SPREAD[400:]), y[400:]) > 0.75  # 4 balanced classes: chance is 0.25


def test_the_selector_names_its_features_and_gives_pandas_output_in_a_pipeline():
    import pandas as pd
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(RandomFeatureSelector(RFF(gamma=0.5, seed=1), n_components=12, rounds=3), SGDClassifier())
    pipe.set_output(transform="pandas")  # refused: the selector had no set_output
    pipe.fit(pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]), Y)
    sel = pipe[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not "X has feature names, but RFF was fitted without feature names"
        out = sel.transform(pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]))
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(sel.feature_map_.get_feature_names_out())
    assert np.array_equal(out.to_numpy(), sel.feature_map_.transform(X))
    assert list(pipe[:-1].get_feature_names_out()) == list(out.columns)
    with pytest.raises(ValueError, match="input_features is not equal"):
        sel.get_feature_names_out([f"z{j}" for j in range(X.shape[1])])
