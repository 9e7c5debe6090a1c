"""The package's estimators implement scikit-learn's API without importing it
(dask_kernels._estimator, dask_kernels._params): a fresh interpreter builds, fits, saves, loads
and applies maps and models with no scikit-learn module loaded, and what the package answers in
scikit-learn's place (constraints, parameter errors, repr) is what scikit-learn answers.
scikit-learn's own estimator checks run in tests/maps/test_common.py and tests/learn/test_softmax.py."""

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import InvalidParameterError, make_constraint, validate_parameter_constraints

from dask_kernels import GCWS, NRFF, RFF, CoRE, Fastfood, KernelModel, Nystroem, SoftmaxSGD
from dask_kernels._params import Interval, StrOptions, declared_constraints, validate_params

_WITHOUT_SKLEARN = r"""
import json, os, sys
import numpy as np
from dask_kernels import GCWS, KernelModel, SoftmaxSGD, from_spec, load_model
from dask_kernels._estimator import check_is_fitted, clone, is_classifier

rng = np.random.default_rng(0)
X = rng.random((300, 6)); y = (X[:, 0] > 0.5).astype(np.int64)
gcws = GCWS(n_components=16, seed=1)
gcws._validate_params()
fitted = clone(gcws).fit(X)
check_is_fitted(fitted)
codes = fitted.transform(X)
again = from_spec(fitted.spec_json())
clf = SoftmaxSGD(code_bits=8, eta0=1 / 16, random_state=0).partial_fit(codes, y, classes=[0, 1])
model = KernelModel(again, clf)
path = model.save(os.path.join(sys.argv[1], "m.dk"))
loaded = load_model(path)
same = bool((loaded.predict(X) == model.predict(X)).all() and (again.transform(X) == codes).all())
print(json.dumps({"same": same, "classifier": is_classifier(loaded), "params": sorted(loaded.get_params()),
                  "loaded": sorted(m for m in ("sklearn", "scipy.stats", "pandas") if m in sys.modules)}))
"""


def test_maps_and_models_work_without_importing_scikit_learn(tmp_path):
    run = subprocess.run([sys.executable, "-c", _WITHOUT_SKLEARN, str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["loaded"] == []
    assert out["same"] and out["classifier"]
    assert "estimator__code_bits" in out["params"] and "feature_map__n_components" in out["params"]


ESTIMATORS = [GCWS(), CoRE(), RFF(), NRFF(), Fastfood(), Nystroem(), SoftmaxSGD()]

#: values of every kind the constraints tell apart (types, bounds, NaN, strings, arrays)
PROBES = [None, True, False, np.bool_(True), 0, 1, -1, 3, 16, 17, 2**32 - 1, 2**32, 2**64 - 1, 2**64, np.int64(5),
          0.0, 0.5, 1.0, 1.5, np.float32(0.25), np.nan, np.inf, -np.inf, "auto", "mean", "scale", "codes",
          "gaussian", "other", [1, 2], (3,), np.array([1.0, 2.0]), np.random.RandomState(0), object()]


def _name(constraint):
    if isinstance(constraint, type):
        return constraint.__name__
    if hasattr(constraint, "sklearn"):  # sets sorted: the same id in every pytest-xdist worker
        fields = sorted((k, sorted(v) if isinstance(v, set) else v) for k, v in vars(constraint).items())
        return f"{type(constraint).__name__}({fields})"
    return repr(constraint)


def _constraints():
    """Every constraint the estimators declare, once."""
    seen = {}
    for est in ESTIMATORS:
        for cs in declared_constraints(type(est)).values():
            for c in cs:
                seen.setdefault(_name(c), c)
    return list(seen.values())


@pytest.mark.parametrize("constraint", _constraints(), ids=_name)
def test_each_constraint_accepts_exactly_what_scikit_learns_accepts(constraint):
    ours = constraint.sklearn() if hasattr(constraint, "sklearn") else constraint
    theirs = make_constraint(ours)
    for value in PROBES:
        mine = True
        try:
            validate_params({"p": [constraint]}, {"p": value}, "T")
        except InvalidParameterError:
            mine = False
        assert mine == theirs.is_satisfied_by(value), (constraint, value)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_invalid_parameters_raise_scikit_learns_error(est):
    cls = type(est)
    declared, as_sklearn = declared_constraints(cls), cls._parameter_constraints
    assert set(declared) == set(as_sklearn) == set(est.get_params())
    for name in declared:
        bad = cls().set_params(**{name: object()})
        with pytest.raises(InvalidParameterError) as ours:
            bad._validate_params()
        with pytest.raises(InvalidParameterError) as theirs:
            validate_parameter_constraints({name: as_sklearn[name]}, {name: object()}, cls.__name__)
        assert str(ours.value).split(" Got ")[0] == str(theirs.value).split(" Got ")[0]  # (the object's address)


def test_validate_params_checks_only_constrained_parameters():
    validate_params({"k": [Interval(int, 1, 2, closed="both")]}, {"k": 2, "free": object()}, "T")
    validate_params({"k": "no_validation"}, {"k": object()}, "T")
    with pytest.raises(InvalidParameterError, match="The 'k' parameter of T must be a str among"):
        validate_params({"k": [StrOptions({"a"})]}, {"k": "b"}, "T")


def _twin(est):
    """An estimator of scikit-learn's BaseEstimator with ``est``'s constructor and parameters."""
    cls = type(type(est).__name__, (BaseEstimator,), {"__init__": type(est).__init__})
    return cls(**est.get_params(deep=False))


REPRS = [GCWS(), GCWS(n_components=8), GCWS(n_components=5, bits=12, output="onehot", seed=3, center="mean"),
         Nystroem(n_components=6, kernel="laplacian", landmarks="kmeans++", gamma=0.5, dtype="float64", seed=7),
         Fastfood(n_components=8, radial="matern", matern_t=2, sigma=1.5, dtype="float64", seed=2, n_jobs=2),
         RFF(n_components=8, kernel="laplacian", density=0.5, feature_ids=[1, 2, 3]),
         SoftmaxSGD(code_bits=8, rank=4, alpha=1e-3, eta0=0.5, average=10, random_state=0, shuffle=False)]


@pytest.mark.parametrize("est", REPRS, ids=lambda e: type(e).__name__)
def test_repr_is_scikit_learns(est):
    assert repr(est) == repr(_twin(est))


def test_kernel_model_is_the_kind_of_its_estimator():
    from sklearn.base import is_classifier, is_regressor
    from sklearn.linear_model import SGDRegressor

    assert is_classifier(KernelModel(GCWS(), SoftmaxSGD()))
    assert is_regressor(KernelModel(None, SGDRegressor())) and not is_classifier(KernelModel(None, SGDRegressor()))
