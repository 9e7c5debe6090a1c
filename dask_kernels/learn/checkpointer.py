"""The training checkpoint: one object owns its format, its path rules and its validation.

A checkpoint is a file of :mod:`dask_kernels._npz` (npz + JSON, no pickle, bounded loading, atomic
replacement) holding the estimator's state (``est/...``), the start-of-epoch state used by
reverts (``snap/...``), the estimator's parameters, the :class:`~.loop.LoopState` and a
fingerprint of the run (source, seed, validation, shuffle window, estimator, epochs) that must
match for a run to resume from it.

Rules: the path must be absent or a dask_kernels checkpoint (a user's file, a directory or a
link is never overwritten); loading validates every value before it reaches the estimator and
names the key it refuses. Format 2 (``dask-kernels-checkpoint-2``) added the shuffle window to
the fingerprint and always stores the epoch counters; format 1 files are refused with a
message that says so.

The path may be an fsspec URL (``s3://bucket/run.ckpt``; credentials and endpoint from fsspec's
configuration, e.g. ``FSSPEC_S3='{"client_kwargs": {"endpoint_url": ...}}'``). Object stores
have no rename, but they replace an object whole: a reader sees the old object or the new one,
never part of an upload (S3, GCS and Azure Blob all do; an unfinished multipart upload is
invisible). So a checkpoint is written locally first (the same file as on disk), uploaded in one
``put``, then read back and compared byte for byte before training goes on (write, then verify:
a mismatch is an error naming the URL). A run killed during the upload leaves the previous
checkpoint. On an fsspec file system that writes in place (SFTP, ...) a torn write is refused
when loading (zip CRCs, manifest, sizes), never resumed from. The same refusals as on disk: an
object that is not a checkpoint, or a prefix holding objects, is never replaced.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from .._estimator import clone
from .._npz import load_npz, read_format, save_npz
from .loop import LoopState, is_eta0
from .state import _unscalar, get_state, json_params, set_state

FORMAT = "dask-kernels-checkpoint-2"
_OLD_FORMATS = ("dask-kernels-checkpoint-1",)


def _canon(v):
    return json.dumps(v, sort_keys=True)


def _short(v):
    s = _canon(v)
    return s if len(s) < 80 else s[:77] + "..."


def prefixed(arrays, prefix):
    return {f"{prefix}/{k}": v for k, v in arrays.items()}


def unprefixed(arrays, prefix):
    n = len(prefix) + 1
    return {k[n:]: v for k, v in arrays.items() if k.startswith(prefix + "/")}


def _defaults(estimator: Any, names: set, where: str) -> dict:
    """JSON defaults of the parameters ``names`` that a checkpoint does not list: the estimator
    gained them after the checkpoint was written (``SoftmaxSGD``'s ``loss``), so it ran with
    their defaults (what the parameter was added as)."""
    if not names:
        return {}
    try:
        defaults = json_params(type(estimator)())
    except (TypeError, ValueError):  # no default-constructed estimator to compare with
        raise ValueError(f"{where}: params name other parameters than {type(estimator).__name__}'s") from None
    return {k: defaults[k] for k in names}


class CheckpointMismatch(ValueError):
    """A checkpoint of another training (other rows, seed, epochs, parameters...): valid, but not
    this run's to resume. ``resume=False`` starts over, replacing it."""


class Checkpointer:
    """Saves and restores one run's checkpoint at ``path``.

    Parameters
    ----------
    path : str or path-like
    fingerprint : dict
        JSON description of the run; a checkpoint written for another fingerprint is refused.
    """

    def __init__(self, path: str | os.PathLike, fingerprint: dict) -> None:
        self.path = os.fspath(path)
        if self.path.startswith("file://"):
            self.path = self.path[len("file://"):]
        self.fingerprint = fingerprint
        self._remote = _Remote(self.path) if "://" in self.path else None
        if self._remote is not None:
            self._remote.check_path(self._check_format)
        else:
            self._check_path()

    def _check_format(self, fmt):
        path = self.path
        if fmt in _OLD_FORMATS:
            raise ValueError(f"checkpoint {path} has the older format {fmt!r}; this version writes "
                             f"{FORMAT!r} and cannot resume it: delete it (or choose another path) "
                             "to start over")
        if fmt != FORMAT:
            raise ValueError(f"checkpoint {path} exists and is not a dask_kernels checkpoint: refusing "
                             "to overwrite it (choose another checkpoint path)")

    def _check_path(self):
        path = self.path
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
            raise ValueError(f"checkpoint {path} exists and is not a file: refusing to use it")
        if os.path.exists(path):
            self._check_format(read_format(path))
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ValueError(f"checkpoint {path}: folder {folder} does not exist")

    def exists(self) -> bool:
        return self._remote.exists() if self._remote is not None else os.path.exists(self.path)

    def save(self, estimator: Any, snapshot: tuple | None, state: LoopState) -> None:
        """Atomically write the estimator, the start-of-epoch ``snapshot`` (or None) and
        ``state``."""
        arrays, est_meta = get_state(estimator)
        payload = prefixed(arrays, "est")
        if snapshot is not None:
            payload.update(prefixed(snapshot[0], "snap"))
        meta = {"format": FORMAT, "fingerprint": self.fingerprint, "params": json_params(estimator),
                "estimator_state": est_meta, "snapshot_state": None if snapshot is None else snapshot[1],
                "loop": state.to_json()}
        if self._remote is None:
            save_npz(self.path, payload, meta)
            return
        with tempfile.TemporaryDirectory(prefix="dk-ckpt-") as tmp:
            local = os.path.join(tmp, "run.ckpt")
            save_npz(local, payload, meta)
            self._remote.put(local)

    def load(self, estimator: Any, *, n_steps: int, epochs: int, width: int,
             halvable: bool) -> tuple[LoopState, tuple | None]:
        """Restore ``estimator`` from the checkpoint; return ``(LoopState, snapshot_or_None)``.

        ``n_steps`` is the number of steps per epoch and ``width`` the learner's number of
        features: the file must agree with both.
        """
        path = self.path
        if self._remote is None:
            arrays, meta = load_npz(path)
        else:
            arrays, meta = self._remote.load()
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path} is not a dask_kernels checkpoint ({meta.get('format')!r})")
        where = f"checkpoint {path}"
        try:
            old = meta["fingerprint"]
            for key in self.fingerprint:
                if _canon(old.get(key)) != _canon(self.fingerprint[key]):
                    raise CheckpointMismatch(f"{where} was written for a different {key} "
                                     f"({_short(old.get(key))} != {_short(self.fingerprint[key])}); "
                                     "delete it or pass resume=False to start over")
            mine, theirs = json_params(estimator), meta["params"]
            if not isinstance(theirs, dict) or not set(theirs) <= set(mine):
                raise ValueError(f"{where}: params name other parameters than {type(estimator).__name__}'s")
            theirs = {**_defaults(estimator, set(mine) - set(theirs), where), **theirs}
            for k, v in theirs.items():
                if k != "eta0" and mine.get(k) != v:
                    raise CheckpointMismatch(f"{where} was written by an estimator with {k}={v!r}, this one has "
                                     f"{mine.get(k)!r}")
            eta0 = _unscalar(theirs["eta0"]) if "eta0" in theirs else None
            if eta0 is not None and not is_eta0(eta0, halvable):
                raise ValueError(f"{where}: params.eta0 must be a finite learning rate, got {eta0!r}")
            state = LoopState.from_json(meta["loop"], where, n_steps, int(epochs), eta0, halvable)
            if eta0 is not None:
                if state.eta0 != eta0:
                    raise ValueError(f"{where}: params.eta0 {eta0!r} != loop.eta0 {state.eta0!r}")
                estimator.set_params(eta0=eta0)
            est_state, snap_state = meta["estimator_state"], meta["snapshot_state"]
        except KeyError as e:
            raise ValueError(f"{where}: missing key {e.args[0]!r}") from None
        except (TypeError, AttributeError) as e:
            raise ValueError(f"{where}: malformed ({e})") from None
        for k in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]:
            delattr(estimator, k)  # drop state of an interrupted in-memory run
        set_state(estimator, unprefixed(arrays, "est"), est_state, where=f"{where} (estimator state)")
        n_in = getattr(estimator, "n_features_in_", None)
        if n_in is not None and n_in != width:
            raise ValueError(f"{where}: the estimator state has {n_in} features, this source gives {width}")
        snapshot = None
        if snap_state is not None:
            snapshot = (unprefixed(arrays, "snap"), snap_state)
            probe = clone(estimator)
            set_state(probe, *snapshot, where=f"{where} (start-of-epoch state)")
            if getattr(probe, "n_features_in_", width) != width:
                raise ValueError(f"{where}: the start-of-epoch state has {probe.n_features_in_} features, "
                                 f"this source gives {width}")
        return state, snapshot


class _Remote:
    """A checkpoint at an fsspec URL: whole-object puts, verified; bounded, validated reads."""

    def __init__(self, url):
        import fsspec

        self.url = url
        self.fs, self.key = fsspec.core.url_to_fs(url)

    def check_path(self, check_format):
        fs, key, url = self.fs, self.key, self.url
        fs.invalidate_cache()  # listings are cached; another run may have written since
        if fs.isfile(key):
            check_format(self._format())
        elif fs.isdir(key):
            raise ValueError(f"checkpoint {url} exists and is not a file (a prefix holding objects): refusing to "
                             "use it")
        bucket = key.split("/", 1)[0]
        if not fs.exists(bucket):
            raise ValueError(f"checkpoint {url}: bucket {bucket} does not exist")

    def exists(self):
        self.fs.invalidate_cache(self.key)
        return self.fs.isfile(self.key)

    def _format(self):
        """The format marker of the object (its metadata member only, read by range requests:
        a large object that is not ours is never downloaded), or None."""
        try:
            size = int(self.fs.info(self.key)["size"])
            with self.fs.open(self.key, "rb") as f:
                return read_format(f, name=self.url, size=size)
        except OSError:
            return None

    def put(self, local):
        """Upload the file ``local`` in one put, then read it back and compare (write, verify)."""
        with open(local, "rb") as f:
            data = f.read()
        self.fs.pipe_file(self.key, data)
        self.fs.invalidate_cache(self.key)
        back = self.fs.cat_file(self.key)
        if back != data:
            raise OSError(f"checkpoint {self.url}: the object read back after the upload differs from what was "
                          f"written ({len(back)} of {len(data)} bytes); is another run writing this checkpoint?")

    def load(self):
        """``(arrays, meta)`` of the object, copied to a temporary file and loaded with the checks of
        a local checkpoint (bounded by the object's size), errors naming the URL."""
        with tempfile.TemporaryDirectory(prefix="dk-ckpt-") as tmp:
            local = os.path.join(tmp, "run.ckpt")
            self.fs.get_file(self.key, local)
            try:
                return load_npz(local)
            except ValueError as e:
                raise ValueError(str(e).replace(local, self.url)) from None
