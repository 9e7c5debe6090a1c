"""Bounded, validated loading of saved models and checkpoints.

A 2 MB model or checkpoint whose .npz held a deflated member of gigabytes used to load with
peak memory of several GB; malformed files gave bare KeyError / JSONDecodeError / BadZipFile
naming no file; a learned array of the wrong shape was accepted (and would reach scikit-learn's
unchecked Cython loops on the next partial_fit).
"""

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel, fit_incremental, load_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOMB_BYTES = 2**28          # what the bombed member inflates to (from ~0.25 MB on disk)
PEAK_BOUND = 150 * 2**20    # loading a refused file may raise peak RSS by at most this
assert BOMB_BYTES > PEAK_BOUND  # a loader that inflated the bomb would break the bound


def _data():
    rng = np.random.default_rng(0)
    X = rng.random((400, 4))
    return X, (X[:, 0] > 0.5).astype(int)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y = _data()
    gcws = GCWS(n_components=16, seed=0).fit(X)
    est = SGDClassifier(random_state=0).fit(gcws.expand(gcws.transform(X)), y)
    path = KernelModel(gcws, est).save(tmp_path_factory.mktemp("m") / "m.dk")
    return path, X


def _copy(saved, tmp_path):
    dst = tmp_path / "copy.dk"
    shutil.copytree(saved[0], dst)
    return str(dst)


def _members(npz):
    with zipfile.ZipFile(npz) as z:
        return {n: z.read(n) for n in z.namelist()}


def _write(npz, members, bomb=None, meta_edit=None):
    """Rewrite ``npz`` from ``members``; ``bomb`` names a member replaced by BOMB_BYTES of
    deflated zeros behind a .npy header that declares them; ``meta_edit(meta)`` edits __meta__."""
    with zipfile.ZipFile(npz, "w") as z:
        for name, data in members.items():
            if name == "__meta__.npy" and meta_edit is not None:
                arr = np.load(io.BytesIO(data))
                meta = json.loads(str(arr))
                meta_edit(meta)
                buf = io.BytesIO()
                np.save(buf, np.array(json.dumps(meta)))
                data = buf.getvalue()
            if name == bomb:
                continue
            z.writestr(name, data)
    if bomb is None:
        return
    # append the bomb member deflated (a second pass: writestr cannot stream)
    with zipfile.ZipFile(npz, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        info = zipfile.ZipInfo(bomb)
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as w:
            np.lib.format.write_array_header_1_0(
                w, {"descr": "<f8", "fortran_order": False, "shape": (BOMB_BYTES // 8,)})
            zeros = bytes(2**24)
            for _ in range(BOMB_BYTES // len(zeros)):
                w.write(zeros)


def _drop_member(npz, name):
    members = _members(npz)
    members.pop(name)
    _write(npz, members)


LOAD_MODEL = """
import json, resource, sys
import numpy as np
from dask_kernels import load_model, fit_incremental, GCWS
from sklearn.linear_model import SGDClassifier
what, path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
X = rng.random((400, 4)); y = (X[:, 0] > 0.5).astype(int)
gcws = GCWS(n_components=16, seed=0).fit(X)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:
    if what == "model":
        load_model(path)
    else:
        fit_incremental(SGDClassifier(random_state=0), X, y, feature_map=gcws, block_rows=100, epochs=1,
                        checkpoint=path, progress=False)
    out = "loaded"
except Exception as e:
    out = f"{type(e).__name__}: {e}"
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"base": base, "peak": peak, "out": out}))
"""


def _load_in_subprocess(what, path):
    proc = subprocess.run([sys.executable, "-c", LOAD_MODEL, what, path], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("declared", [False, True], ids=["header-lies", "manifest-declares-it"])
def test_zip_bombed_model_is_refused_with_bounded_memory(saved, tmp_path, declared):
    path = _copy(saved, tmp_path)
    npz = os.path.join(path, "arrays.npz")

    def declare(meta):
        if "arrays" in meta:
            meta["arrays"]["coef_"] = {"shape": [BOMB_BYTES // 8], "dtype": "<f8"}

    _write(npz, _members(npz), bomb="coef_.npy", meta_edit=declare if declared else None)
    assert os.path.getsize(npz) < 8 * 2**20
    r = _load_in_subprocess("model", path)
    assert r["out"].startswith("ValueError") and npz in r["out"] and "coef_" in r["out"], r["out"]
    assert r["peak"] - r["base"] < PEAK_BOUND, (r["peak"] - r["base"]) / 2**20


@pytest.mark.parametrize("declared", [False, True], ids=["header-lies", "manifest-declares-it"])
def test_zip_bombed_checkpoint_is_refused_with_bounded_memory(tmp_path, declared):
    X, y = _data()
    gcws = GCWS(n_components=16, seed=0).fit(X)
    ck = str(tmp_path / "run.ckpt")
    fit_incremental(SGDClassifier(random_state=0), X, y, feature_map=gcws, block_rows=100, epochs=1,
                    checkpoint=ck, progress=False)

    def declare(meta):
        if "arrays" in meta:
            meta["arrays"]["est/coef_"] = {"shape": [BOMB_BYTES // 8], "dtype": "<f8"}

    _write(ck, _members(ck), bomb="est/coef_.npy", meta_edit=declare if declared else None)
    r = _load_in_subprocess("checkpoint", ck)
    assert r["out"].startswith("ValueError") and ck in r["out"] and "est/coef_" in r["out"], r["out"]
    assert r["peak"] - r["base"] < PEAK_BOUND, (r["peak"] - r["base"]) / 2**20


# -- malformed models: a ValueError naming the file and the key / member --------------------------
def _edit_json(path, edit):
    with open(os.path.join(path, "model.json")) as f:
        meta = json.load(f)
    edit(meta)
    with open(os.path.join(path, "model.json"), "w") as f:
        json.dump(meta, f)


def _set(meta, keys, value):
    d = meta
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value


MODEL_JSON_CASES = {
    "not-json": (lambda p: open(os.path.join(p, "model.json"), "w").write("{not json"), "not valid JSON"),
    "missing-estimator": (lambda p: _edit_json(p, lambda m: m.pop("estimator")), "'estimator'"),
    "missing-state": (lambda p: _edit_json(p, lambda m: m["estimator"].pop("state")), "'state'"),
    "bad-param": (lambda p: _edit_json(p, lambda m: _set(m, ["estimator", "params", "alpha"], -5)),
                  "estimator.params"),
    "unknown-param": (lambda p: _edit_json(p, lambda m: _set(m, ["estimator", "params", "evil"], 1)),
                      "estimator.params"),
    "method-attr": (lambda p: _edit_json(p, lambda m: _set(m, ["estimator", "state", "scalars", "predict"], 1)),
                    "'predict' is not a learned attribute"),
    "dunder-attr": (lambda p: _edit_json(p, lambda m: _set(m, ["estimator", "state", "scalars", "__class__"], 1)),
                    "'__class__'"),
    "bad-n-features": (lambda p: _edit_json(p, lambda m: _set(m, ["estimator", "state", "scalars",
                                                                  "n_features_in_"], 7)), "n_features_in_"),
    "unknown-map": (lambda p: _edit_json(p, lambda m: _set(m, ["feature_map", "method"], "nope")), "feature_map"),
    "map-width": (lambda p: _edit_json(p, lambda m: (_set(m, ["feature_map", "params", "n_components"], 8),
                                                     _set(m, ["feature_map", "n_output_features"], 8))),
                  "trained on"),
    "history": (lambda p: _edit_json(p, lambda m: _set(m, ["history"], 5)), "history"),
}


@pytest.mark.parametrize("case", sorted(MODEL_JSON_CASES))
def test_malformed_model_json_names_file_and_key(saved, tmp_path, case):
    path = _copy(saved, tmp_path)
    damage, key = MODEL_JSON_CASES[case]
    damage(path)
    with pytest.raises(ValueError) as info:
        load_model(path)
    msg = str(info.value)
    assert path in msg and key in msg, msg


def test_damaged_arrays_name_file_and_member(saved, tmp_path):
    path = _copy(saved, tmp_path)
    npz = os.path.join(path, "arrays.npz")
    good = _members(npz)
    # 1. not a zip archive at all
    with open(npz, "wb") as f:
        f.write(b"\x93NUMPY garbage")
    with pytest.raises(ValueError, match="not a zip archive") as info:
        load_model(path)
    assert npz in str(info.value)
    # 2. a member missing
    _write(npz, good)
    _drop_member(npz, "intercept_.npy")
    with pytest.raises(ValueError, match="intercept_") as info:
        load_model(path)
    assert npz in str(info.value)
    # 3. a flipped bit in a stored member's data: the zip CRC catches it
    members = dict(good)
    data = bytearray(members["coef_.npy"])
    data[-3] ^= 0x10
    members["coef_.npy"] = bytes(data)
    with zipfile.ZipFile(npz, "w") as z:  # keep the original CRC: write the raw entry by hand
        for name, blob in good.items():
            z.writestr(name, blob)
    raw = open(npz, "rb").read()
    at = raw.find(good["coef_.npy"])
    raw = raw[:at] + members["coef_.npy"] + raw[at + len(good["coef_.npy"]):]
    open(npz, "wb").write(raw)
    with pytest.raises(ValueError, match="coef_") as info:
        load_model(path)
    assert npz in str(info.value) and "damaged" in str(info.value)


def test_learned_arrays_of_the_wrong_shape_are_refused(saved, tmp_path):
    """A consistent file (manifest, header and size agree) whose coef_ is shorter than the
    model's feature count: scikit-learn's Cython SGD would index past it on partial_fit."""
    path = _copy(saved, tmp_path)
    npz = os.path.join(path, "arrays.npz")
    members = _members(npz)
    coef = np.load(io.BytesIO(members["coef_.npy"]))
    short = coef[:, :-10].copy()
    buf = io.BytesIO()
    np.save(buf, short)
    members["coef_.npy"] = buf.getvalue()

    def declare(meta):
        if "arrays" in meta:
            meta["arrays"]["coef_"]["shape"] = list(short.shape)

    _write(npz, members, meta_edit=declare)
    with pytest.raises(ValueError, match="coef_ has .* columns, n_features_in_ is") as info:
        load_model(path)
    assert path in str(info.value)


def test_a_model_loads_nothing_it_does_not_declare(saved, tmp_path):
    """Extra members are never read (an extra bomb costs nothing)."""
    path = _copy(saved, tmp_path)
    npz = os.path.join(path, "arrays.npz")
    members = _members(npz)
    members["extra.npy"] = b"junk that is not even an npy file"
    _write(npz, members)
    X = saved[1]
    np.testing.assert_array_equal(load_model(path).predict(X), load_model(saved[0]).predict(X))


@pytest.mark.parametrize("name", ["model.json", "arrays.npz"])
@pytest.mark.parametrize("how, says", [("fifo", "is a FIFO"), ("device", "is a character device")])
def test_a_model_file_that_is_no_regular_file_is_refused_unread(saved, tmp_path, capsys, name, how, says):
    from _cli import one_line_error
    from _special_files import deadline, memory_cap

    path = _copy(saved, tmp_path)
    file = os.path.join(path, name)
    os.remove(file)
    os.mkfifo(file) if how == "fifo" else os.symlink("/dev/zero", file)
    with deadline(fifo=file if how == "fifo" else None), memory_cap():
        with pytest.raises(ValueError) as info:
            load_model(path)
        assert f"{file} {says}" in str(info.value) and "not a regular file" in str(info.value), info.value
        assert file in one_line_error(capsys, ["info", path])
