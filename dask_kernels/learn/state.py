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


def set_state(estimator, arrays, meta):
    """Put state from :func:`get_state` back into ``estimator`` (arrays are copied)."""
    restored = {}
    for name, a in arrays.items():
        if "." in name:
            continue
        a = np.array(a, copy=True, order="K")
        if name in meta["object_strings"]:
            a = a.astype(object)
        restored[name] = a
        setattr(estimator, name, a)
    for name, alias in meta["aliases"].items():
        base = restored[alias["of"]]
        setattr(estimator, name, base if alias["same"] else base.reshape(alias["shape"]))
    for r in meta["random_states"]:
        rs = np.random.RandomState()
        rs.set_state((r["kind"], np.asarray(arrays[f"{r['name']}.keys"]), r["pos"], r["has_gauss"],
                      r["cached_gaussian"]))
        setattr(estimator, r["name"], rs)
    for name, v in meta["scalars"].items():
        setattr(estimator, name, _unscalar(v))
    return estimator


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
