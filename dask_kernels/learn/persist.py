"""The on-disk format of a :class:`~dask_kernels.learn.model.KernelModel`: save, load, path checks.

A saved model is a directory of ``model.json`` (the format marker, the feature map's spec, the
estimator's class name, parameters and scalar state, the history, the input column names if
known, whether its svmlight input was zero-based if it was svmlight), ``arrays.npz`` (the
estimator's learned arrays, no pickle) and, for maps with fitted arrays, ``feature_map.npz``
(the sidecar). Locally it is written beside its path and renamed into place; on an fsspec URL
the files are uploaded with ``model.json`` last. Loading never runs code from the files and
checks every field and array before it is used.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import uuid
from typing import Any

from .._files import MAX_JSON_BYTES, file_problem
from .._versions import check_saved, estimator_class, versions
from ..pipeline.fingerprint import check_feature_names
from ..pipeline.location import filesystem, local_path, refuse_nesting
from ..maps.spec import from_spec
from ..sidecar import model_arrays, save_model_arrays
from .._npz import load_npz, save_npz
from .sources import learner_width
from .state import get_state, json_params, params_from_json, set_state


MODEL_FORMAT = "dask-kernels-model-1"
#: The format of a model that reads its svmlight input zero-based (``svmlight_zero_based``):
#: versions before it read every svmlight file one-based, so they refuse such a model rather
#: than shift every column of its input by one. Any other model stays ``MODEL_FORMAT``.
MODEL_FORMAT_ZERO_BASED = "dask-kernels-model-2"
#: The formats this version reads.
MODEL_FORMATS = (MODEL_FORMAT, MODEL_FORMAT_ZERO_BASED)
#: The files of a saved model: a directory holding anything else is not replaced or deleted.
MODEL_FILES = ("model.json", "arrays.npz", "feature_map.npz")  # the last: a map's sidecar arrays, if any

#: Estimators a saved model may hold: their learned state is plain arrays. Loading picks the
#: class from this list by name, so a model file can never name arbitrary code.
SAVABLE = {
    "SGDClassifier": "sklearn.linear_model",
    "SGDRegressor": "sklearn.linear_model",
    "Perceptron": "sklearn.linear_model",
    "PassiveAggressiveClassifier": "sklearn.linear_model",
    "PassiveAggressiveRegressor": "sklearn.linear_model",
    "LogisticRegression": "sklearn.linear_model",
    "RidgeClassifier": "sklearn.linear_model",
    "Ridge": "sklearn.linear_model",
    "LinearRegression": "sklearn.linear_model",
    "LinearSVC": "sklearn.svm",
    "LinearSVR": "sklearn.svm",
    "MultinomialNB": "sklearn.naive_bayes",
    "BernoulliNB": "sklearn.naive_bayes",
    "ComplementNB": "sklearn.naive_bayes",
    "GaussianNB": "sklearn.naive_bayes",
    "MiniBatchKMeans": "sklearn.cluster",
    "SoftmaxSGD": "dask_kernels.learn.softmax",
}


def save_model(model: Any, path: str | os.PathLike, overwrite: bool = False,
               storage_options: dict | None = None) -> str:
    """Write ``model`` to directory ``path``: :meth:`KernelModel.save <dask_kernels.learn.model.KernelModel.save>`
    (which documents the parameters, the result and the errors)."""
    name = type(model.estimator).__name__
    if name not in SAVABLE or getattr(importlib.import_module(SAVABLE[name]), name) is not type(model.estimator):
        raise TypeError(f"cannot save a {name}: saved models hold linear models and naive Bayes "
                        f"only ({', '.join(sorted(SAVABLE))})")
    arrays, state = get_state(model.estimator)
    meta = {
        "format": MODEL_FORMAT,
        "feature_map": None if model.feature_map is None else model.feature_map.spec(),
        "estimator": {"class": name, "params": json_params(model.estimator), "state": state},
        "history": list(model.history or []),
        "feature_names": _names_json(getattr(model, "feature_names_in_", None)),
        "versions": versions(),  # said again when loaded under others (dask_kernels._versions)
    }
    zero_based = getattr(model, "svmlight_zero_based_", None)
    if zero_based is not None:  # only a model trained on svmlight input has the key
        meta["svmlight_zero_based"] = bool(zero_based)
        if zero_based:
            meta["format"] = MODEL_FORMAT_ZERO_BASED
    path = os.fspath(path)
    path = path.rstrip("/") or path
    if local_path(path) is None:
        return _save_remote(path, overwrite, storage_options, lambda d: _write_files(d, model.feature_map, arrays, meta))
    path = local_path(path)
    check_model_path(path, overwrite)
    folder, base = os.path.split(os.path.abspath(path))
    tmp = _new_folder(folder, f".{base}.tmp-")
    try:
        _write_files(tmp, model.feature_map, arrays, meta)
        if check_model_path(path, overwrite) == "model":  # again: it may have changed
            old = tempfile.mkdtemp(prefix=f".{base}.old-", dir=folder)
            os.replace(path, old)  # onto an empty directory: allowed, atomic
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(old, path)
                raise
            _remove_model_dir(old)
        else:
            # absent or empty: rename refuses (ENOTEMPTY, ENOTDIR) anything that appeared
            # there in the meantime instead of replacing it
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # ours: made by mkdtemp above
        raise
    return path


def _new_folder(parent, prefix):
    """A new folder ``prefix<random>`` in ``parent``, created with the mode of any new folder
    (0o777 less the umask), not mkdtemp's 0o700: the saved model is as readable as its parent."""
    while True:
        path = os.path.join(parent, f"{prefix}{uuid.uuid4().hex[:12]}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:  # pragma: no cover - a 48-bit random name taken
            continue


def _names_json(names):
    """``feature_names_in_`` as model.json holds it: a list of str, or None."""
    return None if names is None else [str(n) for n in names]


def _write_files(folder, feature_map, arrays, meta):
    """The model's files in the (new, empty) local ``folder``; model.json last."""
    save_npz(os.path.join(folder, "arrays.npz"), arrays, {"format": MODEL_FORMAT})
    save_model_arrays(feature_map, folder)  # nystroem: the map's fitted arrays, if any
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def _save_remote(url, overwrite, storage_options, write_files):
    """Upload a model to an fsspec URL: its files, then model.json (the completion marker)."""
    fs, p = filesystem(url, storage_options)
    check_model_path(url, overwrite, storage_options)  # before any work
    with tempfile.TemporaryDirectory(prefix="dk-model-") as tmp:
        write_files(tmp)
        state = check_model_path(url, overwrite, storage_options)  # again: it may have changed
        if state == "model":
            fs.rm_file(f"{p}/model.json")  # first: from now on the old model no longer loads
        for name in MODEL_FILES[1:]:  # everything but model.json
            src = os.path.join(tmp, name)
            if os.path.exists(src):
                fs.put_file(src, f"{p}/{name}")
            elif state != "absent" and fs.exists(f"{p}/{name}"):
                fs.rm_file(f"{p}/{name}")  # the previous model's: one of our file names, checked above
        fs.put_file(os.path.join(tmp, "model.json"), f"{p}/model.json")
    fs.invalidate_cache(p)
    return url


class UnreadableModelFile(FileExistsError, ValueError):
    """A model.json that is no file to read (a FIFO, a device, a folder, too large): said as it
    is, not as "not a saved model", since a reader that tried would hang or exhaust memory. A
    ValueError to a loader, a FileExistsError to a save (what is there is not ours to replace),
    as :class:`io.UnsupportedOperation` is both an OSError and a ValueError."""


def _read_model_json(path):
    """model.json of directory ``path`` as a dict, or ValueError naming the file."""
    file = os.path.join(path, "model.json")
    problem = file_problem(file, MAX_JSON_BYTES)  # before opening: a FIFO would block, a device never end
    if problem is not None:
        raise UnreadableModelFile(f"{file} {problem}: not a model file; refusing to read it")
    try:
        with open(file, "rb") as f:
            meta = json.loads(f.read())
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"{file} is not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{file} must hold a JSON object")
    return meta


def _is_model_json(path):
    try:
        return _read_model_json(path).get("format") in MODEL_FORMATS
    except UnreadableModelFile:
        raise
    except (OSError, ValueError):
        return False


def check_model_path(path: str | os.PathLike, overwrite: bool = False, storage_options: dict | None = None) -> str:
    """Whether a model may be written to ``path``: returns "absent", "empty" or "model"
    (on a URL also "partial": only model file names, no model.json, a save that did not finish).

    Raises ``FileExistsError`` naming ``path`` for anything else (a file, a symbolic link, a
    directory that is not a saved model or also holds other files), and for a saved model
    (or a partial one) unless ``overwrite``; ``ValueError`` for a path inside a feature store.
    """
    path = os.fspath(path)
    refuse_nesting(path, storage_options, what="model")  # inside a feature store: not one of its files
    if local_path(path) is None:
        return _check_remote(path, overwrite, storage_options)
    path = local_path(path)
    if not os.path.lexists(path):
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):  # found now, not by the rename after training
            raise FileNotFoundError(f"{path}: folder {parent} does not exist")
        return "absent"
    if os.path.islink(path):
        raise FileExistsError(f"{path} is a symbolic link: refusing to replace it (give the real path)")
    if not os.path.isdir(path):
        raise FileExistsError(f"{path} exists and is not a saved model (a file): refusing to replace it")
    entries = sorted(os.listdir(path))
    if not entries:
        return "empty"
    if not _is_model_json(path):
        raise FileExistsError(f"{path} exists and is not a saved dask_kernels model (no model.json with "
                              f"format {' or '.join(map(repr, MODEL_FORMATS))}): refusing to replace it")
    others = [e for e in entries if e not in MODEL_FILES]
    if others:
        raise FileExistsError(f"{path} holds a saved model and other files ({', '.join(others[:5])}): "
                              "refusing to replace it")
    if not overwrite:
        raise FileExistsError(f"{path} already holds a saved model: pass overwrite=True to replace it")
    return "model"


def _check_remote(url, overwrite, storage_options):
    fs, p = filesystem(url, storage_options)
    fs.invalidate_cache(p)
    if fs.isfile(p):
        raise FileExistsError(f"{url} exists and is not a saved model (an object): refusing to replace it")
    try:
        entries = sorted(os.path.basename(str(e).rstrip("/")) for e in fs.ls(p, detail=False))
    except FileNotFoundError:
        entries = []
    if not entries:
        return "absent"
    others = [e for e in entries if e not in MODEL_FILES]
    if others:
        raise FileExistsError(f"{url} holds other objects than a saved dask_kernels model "
                              f"({', '.join(others[:5])}): refusing to replace it")
    if "model.json" not in entries:
        if not overwrite:
            raise FileExistsError(f"{url} holds a model save that did not finish (no model.json): pass "
                                  "overwrite=True to replace it")
        return "partial"
    try:
        meta = _read_remote_json(fs, f"{p}/model.json", f"{url}/model.json")
    except ValueError:
        meta = {}
    if meta.get("format") not in MODEL_FORMATS:
        raise FileExistsError(f"{url} exists and is not a saved dask_kernels model (no model.json with "
                              f"format {' or '.join(map(repr, MODEL_FORMATS))}): refusing to replace it")
    if not overwrite:
        raise FileExistsError(f"{url} already holds a saved model: pass overwrite=True to replace it")
    return "model"


def _read_remote_json(fs, p, name):
    if fs.size(p) > MAX_JSON_BYTES:
        raise ValueError(f"{name} is larger than {MAX_JSON_BYTES:,} bytes: not a model file")
    try:
        meta = json.loads(fs.cat_file(p))
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{name} is not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{name} must hold a JSON object")
    return meta


def _load_remote(url, max_bytes, storage_options):
    """Load a model from an fsspec URL: its files copied to a temporary folder (at most their
    own size: the checks of the local loader bound memory by it), errors naming the URL."""
    fs, p = filesystem(url, storage_options)
    fs.invalidate_cache(p)
    if not fs.isfile(f"{p}/model.json"):
        raise FileNotFoundError(f"{url} is not a saved model (no {url}/model.json)")
    _read_remote_json(fs, f"{p}/model.json", f"{url}/model.json")  # size and JSON checked before the rest
    with tempfile.TemporaryDirectory(prefix="dk-model-") as tmp:
        for name in MODEL_FILES:
            if fs.isfile(f"{p}/{name}"):
                fs.get_file(f"{p}/{name}", os.path.join(tmp, name))
        try:
            return read_model(tmp, max_bytes=max_bytes)
        except (ValueError, FileNotFoundError) as e:
            raise type(e)(str(e).replace(tmp, url)) from None


def _remove_model_dir(path):
    # delete only the files a model consists of; rmdir fails (and keeps it) if anything else
    # appeared there
    for name in MODEL_FILES:
        try:
            os.unlink(os.path.join(path, name))
        except FileNotFoundError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        import warnings

        warnings.warn(f"left the previous model at {path}: it holds files that are not ours", stacklevel=4)


def read_model(path: str | os.PathLike, *, max_bytes: int | None = None,
               storage_options: dict | None = None) -> tuple[Any, Any, list, list | None, bool | None]:
    """``(feature map, estimator, history, feature names or None, svmlight index base or None)``
    of the model saved at ``path``, every field and
    array checked: :func:`~dask_kernels.learn.model.load_model` (which documents the checks,
    the parameters and the errors)."""
    path = os.fspath(path)
    if local_path(path) is None:
        return _load_remote(path.rstrip("/"), max_bytes, storage_options)
    path = local_path(path)
    if not os.path.exists(os.path.join(path, "model.json")):  # a FIFO or device: refused naming it below
        raise FileNotFoundError(f"{path} is not a saved model (no {os.path.join(path, 'model.json')})")
    meta = _read_model_json(path)
    where = os.path.join(path, "model.json")
    if meta.get("format") not in MODEL_FORMATS:
        raise ValueError(f"{path} is not a saved dask_kernels model (format {meta.get('format')!r})")
    try:
        est_meta = meta["estimator"]
        name = est_meta["class"]
        if not isinstance(name, str) or name not in SAVABLE:
            raise ValueError(f"{where}: estimator.class {name!r} is not a loadable model class "
                             f"({', '.join(sorted(SAVABLE))})")
        cls = estimator_class(SAVABLE[name], name, check_saved(meta.get("versions"), where), where)
        params = est_meta["params"]
        if not isinstance(params, dict):
            raise ValueError(f"{where}: estimator.params must be an object")
        try:
            estimator = cls(**params_from_json(params))
            estimator._validate_params()
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: estimator.params: {e}") from None
        state = est_meta["state"]
        history = meta["history"]
        spec = meta["feature_map"]
        names = meta.get("feature_names")  # absent in models saved before it was kept
        zero_based = meta.get("svmlight_zero_based")  # likewise (and null: not trained on svmlight)
    except KeyError as e:
        raise ValueError(f"{where}: missing key {e.args[0]!r}") from None
    except (TypeError, AttributeError) as e:
        raise ValueError(f"{where}: malformed ({e})") from None
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError(f"{where}: history must be a list of objects")
    if not isinstance(state, dict):
        raise ValueError(f"{where}: estimator.state must be an object")
    if zero_based is not None and not isinstance(zero_based, bool):
        raise ValueError(f"{where}: svmlight_zero_based must be true, false or null, got {zero_based!r}")
    if not os.path.exists(os.path.join(path, "arrays.npz")):  # e.g. only model.json was copied
        raise ValueError(f"{path}: incomplete saved model: arrays.npz is missing (copy the whole folder)")
    arrays, _ = load_npz(os.path.join(path, "arrays.npz"), max_bytes=max_bytes)
    set_state(estimator, arrays, state, where=f"{path} (estimator state)")
    fmap = None
    if spec is not None:
        try:
            fmap = from_spec(spec, arrays=model_arrays(path))
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise ValueError(f"{where}: feature_map: {e}") from None
        from .softmax import feeds_codes

        try:
            width = int(fmap.n_output_features_) if feeds_codes(estimator, fmap, where) else learner_width(fmap)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        n_in = getattr(estimator, "n_features_in_", None)
        if n_in is not None and n_in != width:
            raise ValueError(f"{where}: the estimator was trained on {n_in} features, the feature map "
                             f"gives {width}")
    n_raw = int(fmap.n_features_in_) if fmap is not None else getattr(estimator, "n_features_in_", None)
    return fmap, estimator, history, check_feature_names(names, n_raw, f"{where}: feature_names"), zero_based
