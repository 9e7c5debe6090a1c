"""``dask-kernels train --method gcws``'s defaults: k = 2048, b = 4, SoftmaxSGD at eta0 = 4 / k
(chosen on validation splits of real data: docs/guide/training.md); rff, nrff, fastfood and
nystroem k = 1024 (the same measurement), core k = 256; other learners eta0 = 1 / (mean squared
row norm). Raw rows without ``--method`` get that recipe;
``--method raw`` trains on the rows as they are."""

import numpy as np
import pytest

from dask_kernels import load_model
from dask_kernels.cli import main


@pytest.fixture
def rows(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0).astype(np.int64))
    return tmp_path


def _train(d, *options):
    out = d / "m.dk"
    assert main(["train", str(d / "X.npy"), "--labels", str(d / "y.npy"), "-o", str(out), "--overwrite",
                 "--epochs", "1", "--no-progress", *options]) == 0
    return load_model(out)


@pytest.mark.parametrize("options, k, bits", [((), 2048, 4), (("--n-components", "64"), 64, 4),
                                              (("--param", "bits=8"), 2048, 8),
                                              (("--param", "n_components=32", "--param", "bits=2"), 32, 2)])
def test_gcws_defaults(rows, options, k, bits):
    m = _train(rows, "--method", "gcws", *options)
    assert (m.feature_map.n_components, m.feature_map.bits) == (k, bits)
    assert type(m.estimator).__name__ == "SoftmaxSGD"
    # one-hot GCWS rows have exactly k ones: 1 / (mean squared norm) = 1 / k, times 4 for softmax;
    # the schedule may have halved it since (a power of two)
    ratio = (4.0 / k) / m.estimator.eta0
    assert ratio >= 1 and np.log2(ratio) == int(np.log2(ratio))
    assert m.history[0]["eta0"] == pytest.approx(4.0 / k)


def test_softmax_with_the_hinge_loss_on_codes_steps_at_one_over_norm(rows):
    m = _train(rows, "--method", "gcws", "--n-components", "64", "--loss", "hinge")
    assert m.estimator.loss == "hinge" and m.history[0]["eta0"] == pytest.approx(1.0 / 64)
    assert not hasattr(m.estimator, "predict_proba")
    assert _train(rows, "--n-components", "64").estimator.loss == "log_loss"  # the default


def test_loss_is_a_parameter_of_softmax_only(rows, capsys):
    m = _train(rows, "--method", "rff", "--n-components", "64", "--estimator", "softmax", "--loss", "hinge")
    assert m.estimator.loss == "hinge"
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(rows / "s.dk"),
                 "--estimator", "sgd", "--loss", "hinge"]) == 1
    assert "--loss is a parameter of --estimator softmax, not of sgd (SGDClassifier's hinge loss is " \
           "--estimator sgd-hinge)" in capsys.readouterr().err


def test_other_learners_and_maps_keep_one_over_norm(rows):
    m = _train(rows, "--method", "gcws", "--estimator", "sgd", "--n-components", "64")
    assert m.history[0]["eta0"] == pytest.approx(1.0 / 64)
    m = _train(rows, "--method", "rff")
    assert m.feature_map.n_components == 1024  # rff, nrff, fastfood, nystroem: chosen on validation splits
    assert _train(rows, "--method", "core").feature_map.n_components == 256
    F = m.feature_map.transform(np.load(rows / "X.npy"))  # the first block: every row here
    assert m.history[0]["eta0"] == pytest.approx(1.0 / np.mean(np.square(F).sum(axis=1)))
    assert _train(rows, "--method", "gcws", "--eta0", "0.5").history[0]["eta0"] == 0.5


def test_raw_rows_get_the_default_recipe_unless_method_raw(rows, capsys):
    # raw rows once trained a linear model on themselves, unscaled, when --method was left out:
    # on UCI Glass that scored 0.148 (below the majority class), against 0.685 with the recipe
    m = _train(rows)
    assert (m.feature_map.method, m.feature_map.n_components, m.feature_map.bits) == ("gcws", 2048, 4)
    assert type(m.estimator).__name__ == "SoftmaxSGD"
    assert m.history[0]["eta0"] == pytest.approx(4.0 / 2048)
    m = _train(rows, "--method", "raw")
    assert m.feature_map is None and type(m.estimator).__name__ == "SGDClassifier"
    assert m.estimator.coef_.shape == (1, 5)


@pytest.mark.parametrize("options, flag", [(("--param", "bits=8"), "--param"), (("--n-components", "64"),
                                                                                 "--n-components")])
def test_map_parameters_with_method_raw_are_refused(rows, capsys, options, flag):
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(rows / "m.dk"),
                 "--method", "raw", *options]) != 0
    err = capsys.readouterr().err
    assert f"{flag}: --method raw trains on the rows as they are" in err
    assert not (rows / "m.dk").exists()


@pytest.mark.parametrize("method", [(), ("--method", "gcws"), ("--method", "rff"), ("--method", "raw")])
def test_an_empty_npy_is_named_whatever_the_map(tmp_path, capsys, method):
    # with a map, the map's fit on no rows raised first, with a message naming no file
    np.save(tmp_path / "X.npy", np.zeros((0, 3)))
    np.save(tmp_path / "y.npy", np.zeros(0))
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "-o",
                 str(tmp_path / "m.dk"), *method]) != 0
    err = capsys.readouterr().err
    assert "X.npy: has no rows" in err and "0 sample(s)" not in err
    assert not (tmp_path / "m.dk").exists()


def _parsed(*options):
    import argparse

    from dask_kernels.cli import train

    parser = argparse.ArgumentParser()
    train.add_arguments(parser)
    return parser.parse_args(["X.npy", "-o", "m.dk", *options])


@pytest.mark.parametrize("n_rows, options, want", [
    (99_999, (), (0.0, 20)), (100_000, (), (0.1, 10)), (10**8, (), (0.1, 10)),
    (120, ("--epochs", "3"), (0.0, 3)), (120, ("--validation-fraction", "0.2"), (0.2, 10)),
    (10**6, ("--validation-fraction", "0"), (0.0, 20)), (120, ("--metric", "accuracy"), (0.1, 10))])
def test_the_held_out_set_and_epochs_follow_the_input_size(n_rows, options, want):
    # a held-out set under 10,000 rows decides the schedule on noise: smaller inputs train on
    # every row, for 20 epochs instead of 10 (a metric named asks for held-out rows)
    from dask_kernels.cli.train import _schedule

    assert _schedule(_parsed(*options), n_rows) == want


def test_a_small_input_trains_every_row_for_twenty_epochs(rows, capsys):
    # 120 rows: 10 % held out was 12 rows, whose scores reverted and stopped the training (UCI
    # Glass ended on its first epoch's model: 0.685 against 0.741 now, on its 54 test rows)
    out = rows / "m.dk"
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(out),
                 "--no-progress"]) == 0
    assert "20 epochs, every row trains (no held-out set)" in capsys.readouterr().out
    history = load_model(out).history
    assert len(history) == 20 and all(r["rows"] == 120 and "metric" not in r for r in history)
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(out), "--overwrite",
                 "--no-progress", "--metric", "accuracy", "--epochs", "2"]) == 0
    assert "2 epochs, 0.1 held out" in capsys.readouterr().out
    history = load_model(out).history
    assert history[0]["metric"] == "accuracy" and history[0]["rows"] < 120


def test_a_metric_without_held_out_rows_is_refused_before_anything_runs(rows, capsys):
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(rows / "m.dk"),
                 "--metric", "accuracy", "--validation-fraction", "0"]) != 0
    assert "--metric accuracy: the schedule decides on held-out rows" in capsys.readouterr().err
    assert not (rows / "m.dk").exists()


def test_a_metric_the_learner_does_not_give_is_refused_naming_the_option(rows, capsys):
    # the refusal named the library's parameter (metric='erp'), and came after the
    # "training ..." line
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(rows / "m.dk"),
                 "--loss", "hinge", "--metric", "erp"]) != 0
    out, err = capsys.readouterr()
    assert "--metric erp: the held-out scores of SoftmaxSGD (a classifier, without predict_proba) are " \
           "'error', 'accuracy': choose one of them" in err
    assert "metric='erp'" not in err and "training" not in out
    assert not (rows / "m.dk").exists()


@pytest.mark.parametrize("method", ["rff", "nrff", "fastfood"])
@pytest.mark.parametrize("scaled", [True, False])
def test_gaussian_maps_scale_their_input_and_learn_their_bandwidth_unless_given(rows, method, scaled):
    # gamma=1.0, the maps' own default, assumes features of unit scale: on raw digits rows RFF
    # scored 0.107 with it in train, 0.986 with gamma="scale" (means of five splits); without
    # input scaling, columns in other units decide the kernel (wine 0.707, with it 0.982)
    X, factor = np.load(rows / "X.npy"), 1.0
    options = ("--method", method, "--n-components", "16") + (() if scaled else ("--param", "scale=null"))
    fmap = _train(rows, *options).feature_map
    if scaled:  # each column's range onto [-1, 1], as GCWS's default; gamma from the scaled rows
        assert fmap.scale == "auto" and fmap.scale_ == {"rule": "minmax", "min": X.min(0).tolist(),
                                                        "max": X.max(0).tolist()}
        lo, hi = X.min(0), X.max(0)
        X = (X - (0.5 * lo + 0.5 * hi)) * (1.0 / (0.5 * hi - 0.5 * lo))
    else:
        assert fmap.scale is None and "scale" not in fmap.spec()["state"]
    if method == "nrff":  # its kernel is exp(-(gamma / 2) ||u - v||^2) on the rows u scaled to length 1
        X, factor = X / np.linalg.norm(X, axis=1, keepdims=True), 2.0
    assert fmap.gamma == "scale" and fmap.gamma_ == pytest.approx(factor / (X.shape[1] * X.var()), rel=1e-12)
    assert _train(rows, *options, "--param", "gamma=0.5").feature_map.gamma == 0.5
    if method == "fastfood":  # its other way of giving the bandwidth: no gamma is added beside it
        fmap = _train(rows, *options, "--param", "sigma=2.0").feature_map
        assert fmap.sigma == 2.0 and fmap.gamma is None


def test_nystroem_scales_its_input_unless_told_not_to(rows):
    # on raw UCI rows, GMM Nystroem (k = 256) with scaled columns scored 0.774 against 0.712 on
    # Vehicle, 0.978 against 0.889 on wine (means of three splits)
    X = np.load(rows / "X.npy")
    fmap = _train(rows, "--method", "nystroem", "--n-components", "16").feature_map
    assert fmap.scale == "auto" and fmap.scale_ == {"rule": "minmax", "min": X.min(0).tolist(),
                                                    "max": X.max(0).tolist()}
    fmap = _train(rows, "--method", "nystroem", "--n-components", "16", "--param", "scale=null").feature_map
    assert fmap.scale is None and "scale" not in fmap.spec()["state"]


def test_the_default_k_on_input_too_wide_for_it_names_the_option(tmp_path, capsys):
    # rff's d x k projection is bounded (2 GiB): k = 1024 allows 262,144 columns, and the message
    # says which option lowers k
    (tmp_path / "rows.svm").write_text("1 1:0.5 7:2.0\n0 3:1.0\n" * 20)
    out = tmp_path / "m.dk"
    assert main(["train", str(tmp_path / "rows.svm"), "--n-features", "300000", "--method", "rff", "-o", str(out),
                 "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "n_components=1,024" in err and "(--n-components on the command line)" in err
    assert not out.exists()
    assert main(["train", str(tmp_path / "rows.svm"), "--n-features", "300000", "--method", "rff", "--n-components",
                 "256", "-o", str(out), "--no-progress", "--epochs", "1"]) == 0


def test_gcws_standardizes_dense_rows_unless_told_otherwise(rows, tmp_path, capsys):
    # on validation splits of twelve real datasets standardized columns were 0.8 points ahead of
    # GCWS's own "auto" (each column's range onto [-1, 1]) on average: Glass +3.7, Satellite +2.9
    # (benchmarks/sweep_input_rule.py --validation)
    from dask_kernels.cli.train import GCWS_DENSE_SCALE

    X = np.load(rows / "X.npy")
    fmap = _train(rows, "--n-components", "16").feature_map
    assert GCWS_DENSE_SCALE == "auto_standard" and fmap.scale == "auto_standard"
    assert fmap.scale_["rule"] == "standard"
    assert fmap.scale_["mean"] == pytest.approx(X.mean(0).tolist(), rel=1e-14, abs=1e-15)
    assert fmap.scale_["std"] == pytest.approx(X.std(0).tolist(), rel=1e-13)
    assert _train(rows, "--n-components", "16", "--param", "scale=minmax").feature_map.scale_["rule"] == "minmax"
    assert _train(rows, "--n-components", "16", "--param", "scale=null").feature_map.scale is None
    centred = _train(rows, "--n-components", "16", "--param", "center=mean").feature_map
    assert centred.scale_ is None and centred.center_ is not None  # center replaces the scale, as before
    m = tmp_path / "std.dk"  # info says what was learned
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "-o", str(m), "--epochs", "1",
                 "--no-progress", "--n-components", "16"]) == 0
    capsys.readouterr()
    assert main(["info", str(m)]) == 0
    assert "each column centred on its training mean and divided by its standard deviation" in \
        capsys.readouterr().out


def test_gcws_divides_dense_rows_of_mostly_zeros_by_their_largest_value(rows):
    # centred, rows of mostly zeros (MNIST's pixels, one-hot columns) are dense and GCWS hashes
    # every nonzero: on MNIST "maxabs" was 0.5 points ahead on validation and twice as fast
    X = np.load(rows / "X.npy")
    X[np.arange(120)[:, None] % 5 != np.arange(5)] = 0.0  # one nonzero per row
    np.save(rows / "X.npy", X)
    fmap = _train(rows, "--n-components", "16").feature_map
    assert fmap.scale == "auto_standard"
    assert fmap.scale_ == {"rule": "maxabs", "max_abs": np.abs(X).max(0).tolist()}


def test_gcws_keeps_auto_on_sparse_rows(tmp_path):
    # standardizing would densify an svmlight file's rows: "auto" is "maxabs" there, zeros stay zeros
    (tmp_path / "rows.svm").write_text("".join(f"{i % 2} 1:{i + 1} 3:{(i * 7) % 5 + 1}\n" for i in range(60)))
    out = tmp_path / "m.dk"
    assert main(["train", str(tmp_path / "rows.svm"), "-o", str(out), "--epochs", "1", "--no-progress",
                 "--n-components", "16"]) == 0
    fmap = load_model(out).feature_map
    assert fmap.scale == "auto" and fmap.scale_["rule"] == "maxabs"
