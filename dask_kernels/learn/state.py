"""An estimator's learned state as plain arrays and JSON: checkpoints and saved models, no pickle.

:func:`get_state` splits an estimator's instance attributes that are not constructor parameters
into NumPy arrays (for ``np.savez``) and JSON-able scalars; :func:`set_state` puts them back.
Loading never executes code: arrays are read with ``allow_pickle=False`` and the estimator
class is chosen by the caller.

Two details make a restored estimator continue *identically* under ``partial_fit``:

* arrays that are the same object or views of one another (scikit-learn's averaged SGD keeps
  ``coef_`` as a view of ``_average_coef``/``_standard_coef`` and writes through it) are stored
  once and restored as the same object / view;
* ``numpy.random.RandomState`` attributes (MiniBatchKMeans' ``_random_state``) are stored as
  their Mersenne-Twister state.

Attributes that scikit-learn rebuilds on every ``partial_fit`` call (the SGD loss object) are
skipped; any other kind of attribute is refused with an error that names it.
"""

import numpy as np

from ..labels import check_classes

#: Attributes rebuilt by ``partial_fit``/``predict`` on every call: not state.
_REBUILT = {"_loss_function_"}


def _scalar(v):
    if isinstance(v, np.generic):
        return {"np": v.dtype.str, "value": v.item()}
    return v


def _unscalar(v):
    if isinstance(v, dict) and "np" in v:
        return np.dtype(v["np"]).type(v["value"])
    return v


def _jsonable_scalar(v):
    return v is None or isinstance(v, (bool, int, float, str, np.bool_, np.integer, np.floating))


def get_state(estimator):
    """Learned state of ``estimator`` as ``(arrays, meta)``.

    Parameters
    ----------
    estimator : scikit-learn estimator

    Returns
    -------
    arrays : dict of str to ndarray
        Safe for ``np.savez`` and ``np.load(allow_pickle=False)`` (no object arrays).
    meta : dict
        JSON-able description: scalars, aliases, random states.

    Raises
    ------
    TypeError
        If an attribute cannot be stored without pickle (its name is in the message).
    """
    params = set(estimator.get_params(deep=False))
    arrays, scalars, aliases, randoms, objstr = {}, {}, {}, [], []
    seen = []  # (name, array) of stored arrays, to detect shared memory
    for name, value in vars(estimator).items():
        if name in params or name in _REBUILT:
            continue
        if isinstance(value, np.ndarray):
            base = next((n for n, a in seen if a is value or (a.nbytes == value.nbytes
                         and a.size and np.shares_memory(a, value))), None)
            if base is not None:
                aliases[name] = {"of": base, "shape": list(value.shape), "same": arrays[base] is value}
                continue
            if value.dtype == object:
                if not all(isinstance(x, str) for x in value.ravel()):
                    raise TypeError(f"attribute {name!r} is an object array that is not all strings: "
                                    "it cannot be stored without pickle")
                arrays[name] = value.astype(str)
                objstr.append(name)
            else:
                arrays[name] = value
            seen.append((name, value))
        elif isinstance(value, np.random.RandomState):
            kind, keys, pos, has_gauss, cached = value.get_state()
            arrays[f"{name}.keys"] = keys
            randoms.append({"name": name, "kind": kind, "pos": int(pos), "has_gauss": int(has_gauss),
                            "cached_gaussian": float(cached)})
        elif _jsonable_scalar(value):
            scalars[name] = _scalar(value)
        else:
            raise TypeError(f"attribute {name!r} of {type(estimator).__name__} is a "
                            f"{type(value).__name__}: it cannot be stored without pickle")
    meta = {"scalars": scalars, "aliases": aliases, "random_states": randoms, "object_strings": objstr}
    return arrays, meta


def copy_state(state):
    """A deep copy of ``(arrays, meta)`` that later training cannot modify."""
    arrays, meta = state
    return {k: np.array(v, copy=True) for k, v in arrays.items()}, meta


def _attr_name(estimator, name, where):
    # a file names the attributes it sets: only learned-state names, never a method, a
    # constructor parameter or a dunder
    if (not isinstance(name, str) or not name.isidentifier() or name.startswith("__")
            or hasattr(type(estimator), name) or name in estimator.get_params(deep=False)):
        raise ValueError(f"{where}: {name!r} is not a learned attribute of {type(estimator).__name__}")
    return name


def set_state(estimator, arrays, meta, where="state"):
    """Put state from :func:`get_state` back into ``estimator`` (arrays are copied).

    ``meta`` and ``arrays`` may come from a file: every name, alias, scalar and random state
    is checked, and then the learned arrays' shapes against each other
    (:func:`check_learned_shapes`); errors are ``ValueError`` naming ``where`` and the key.
    """
    try:
        restored = {}
        objstr = meta["object_strings"]
        for name, a in arrays.items():
            if "." in name:
                continue
            a = np.array(a, copy=True, order="K")
            if name in objstr:
                a = a.astype(object)
            restored[_attr_name(estimator, name, where)] = a
        for name, alias in meta["aliases"].items():
            _attr_name(estimator, name, where)
            if alias["of"] not in restored:
                raise ValueError(f"{where}: aliases[{name!r}] refers to {alias['of']!r}, which is not stored")
            base = restored[alias["of"]]
            restored[name] = base if alias["same"] is True else base.reshape([int(n) for n in alias["shape"]])
        randoms = {}
        for r in meta["random_states"]:
            keys = np.asarray(arrays[f"{r['name']}.keys"])
            if r["kind"] != "MT19937" or keys.shape != (624,) or keys.dtype != np.uint32 \
                    or not 0 <= int(r["pos"]) <= 624:
                raise ValueError(f"{where}: random_states[{r['name']!r}] is not a Mersenne-Twister state")
            rs = np.random.RandomState()
            rs.set_state(("MT19937", keys, int(r["pos"]), int(r["has_gauss"]), float(r["cached_gaussian"])))
            randoms[_attr_name(estimator, r["name"], where)] = rs
        scalars = {}
        for name, v in meta["scalars"].items():
            if not (_jsonable_scalar(v) or (isinstance(v, dict) and set(v) == {"np", "value"}
                                            and np.dtype(v["np"]).kind in "biuf")):
                raise ValueError(f"{where}: scalars[{name!r}] is not a number, string or None")
            scalars[_attr_name(estimator, name, where)] = _unscalar(v)
    except KeyError as e:
        raise ValueError(f"{where}: missing key {e.args[0]!r}") from None
    except (TypeError, AttributeError, OverflowError) as e:
        raise ValueError(f"{where}: malformed state ({e})") from None
    for name, value in {**restored, **randoms, **scalars}.items():
        setattr(estimator, name, value)
    check_learned_shapes(estimator, where)
    own = getattr(estimator, "_check_learned_shapes", None)  # estimators of this package check their own
    if own is not None:
        own(where)
    return estimator


#: Learned arrays of shape (rows, n_features) / (rows,) per estimator family, checked against
#: each other: scikit-learn's Cython SGD and k-means loops index them without bounds checks.
_PER_FEATURE = ("coef_", "_standard_coef", "_average_coef", "feature_count_", "feature_log_prob_",
                "theta_", "var_", "cluster_centers_")
_PER_ROW = ("intercept_", "_standard_intercept", "_average_intercept")
_PER_CLASS = ("class_count_", "class_log_prior_", "class_prior_", "_expanded_class_weight")


def check_learned_shapes(estimator, where="state"):
    """Raise ``ValueError`` (naming ``where`` and the attribute) unless the learned arrays of
    ``estimator`` agree with ``n_features_in_``, the classes and each other."""
    v = vars(estimator)

    def fail(name, what):
        raise ValueError(f"{where}: {name} {what}")

    n_features = v.get("n_features_in_")
    if n_features is not None and (not isinstance(n_features, (int, np.integer))
                                   or isinstance(n_features, (bool, np.bool_)) or n_features < 1):
        fail("n_features_in_", f"must be a positive integer, got {n_features!r}")
    classes = v.get("classes_")
    if classes is not None and (not isinstance(classes, np.ndarray) or classes.ndim != 1):
        fail("classes_", "must be a 1-D array")
    if classes is not None and classes.dtype.kind in "UO":  # class names: bounded as where they enter
        check_classes(classes.astype(str) if classes.dtype.kind == "O" else classes, f"{where}: classes_")
    n_classes = None if classes is None else classes.shape[0]
    coef = v.get("coef_")
    for name in _PER_FEATURE:
        a = v.get(name)
        if a is None:
            continue
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or a.ndim not in (1, 2):
            fail(name, "must be a 1-D or 2-D float array")
        if n_features is not None and a.shape[-1] != n_features:
            fail(name, f"has {a.shape[-1]} columns, n_features_in_ is {n_features}")
        if name in ("_standard_coef", "_average_coef") and isinstance(coef, np.ndarray) and a.size != coef.size:
            fail(name, f"has shape {a.shape}, coef_ has shape {coef.shape}")  # SGD's running copies
        if name == "coef_" and n_classes is not None:
            want = 1 if n_classes == 2 else n_classes
            if a.ndim != 2 or a.shape[0] != want:
                fail(name, f"has shape {a.shape}, expected ({want}, {a.shape[-1]}) for {n_classes} classes")
        elif name in ("feature_count_", "feature_log_prob_", "theta_", "var_") and n_classes is not None \
                and (a.ndim != 2 or a.shape[0] != n_classes):
            fail(name, f"has shape {a.shape}, expected {n_classes} rows (one per class)")
        elif name == "cluster_centers_":
            k = estimator.get_params(deep=False).get("n_clusters")
            if a.ndim != 2 or (k is not None and a.shape[0] != k):
                fail(name, f"has shape {a.shape}, expected ({k}, n_features)")
            counts = v.get("_counts")
            if counts is not None and (not isinstance(counts, np.ndarray) or counts.shape != (a.shape[0],)):
                fail("_counts", f"must have shape ({a.shape[0]},)")
    for name in _PER_ROW:
        a = v.get(name)
        if a is None or coef is None or not isinstance(coef, np.ndarray):
            continue
        want = (coef.shape[0],) if coef.ndim == 2 else (1,)
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or (a.shape != want and a.shape != ()):
            fail(name, f"must be a float array of shape {want}")
    for name in _PER_CLASS:
        a = v.get(name)
        if a is None or n_classes is None:
            continue
        if not isinstance(a, np.ndarray) or a.shape != (n_classes,):
            fail(name, f"must have shape ({n_classes},), one value per class")


def json_params(estimator):
    """``estimator.get_params(deep=False)`` if every value is JSON-able, else ``TypeError``."""
    params = estimator.get_params(deep=False)
    out = {}
    for k, v in params.items():
        if isinstance(v, dict) and all(isinstance(x, (str, int, float)) for x in v.values()):
            # class_weight={0: 1.0, ...}: JSON keys are strings, keep the original key types
            out[k] = {"dict_items": [[_scalar(a), _scalar(b)] for a, b in v.items()]}
        elif _jsonable_scalar(v):
            out[k] = _scalar(v)
        else:
            raise TypeError(f"parameter {k}={v!r} of {type(estimator).__name__} is not JSON-able; "
                            "use plain numbers and strings (e.g. an int random_state)")
    return out


def params_from_json(params):
    out = {}
    for k, v in params.items():
        if isinstance(v, dict) and "dict_items" in v:
            out[k] = {_unscalar(a): _unscalar(b) for a, b in v["dict_items"]}
        else:
            out[k] = _unscalar(v)
    return out
