"""Differential fuzzing of the project's byte parsers (run by tests/faults/test_fuzz_parsers.py).

Each case mutates the bytes of a valid input (seeded: bit flips, truncation, inserted random
bytes, a duplicated stretch) and asks the parser to read them. The case passes when the result
equals the reference's or the parser refuses with its own clear error naming the file; any
other exception, or a different result, is a failure. The cases run in a child process
(``python tests/_fuzz.py TARGET SEED N FOLDER``), so a crash fails the test instead of ending
pytest; the child prints one JSON line: outcome counts and the failures.
"""

import json
import os
import sys
import traceback

import numpy as np


def mutate(data, rng):
    """``(bytes, what)``: ``data`` with 1 or 2 seeded mutations."""
    data = bytearray(data)
    done = []
    for _ in range(int(rng.integers(1, 3))):
        kind = int(rng.integers(4))
        at = int(rng.integers(0, len(data) + 1))
        if kind == 0 and data:  # flip one bit
            at = min(at, len(data) - 1)
            bit = int(rng.integers(8))
            data[at] ^= 1 << bit
            done.append(f"flip bit {bit} at {at}")
        elif kind == 1:  # cut the end off
            del data[at:]
            done.append(f"truncate at {at}")
        elif kind == 2:  # insert random bytes, half of the time printable ones
            n = int(rng.integers(1, 9))
            pool = np.frombuffer(b"0123456789.:-+eE# \t\r\nqid", np.uint8) if rng.random() < 0.5 else None
            new = rng.choice(pool, n) if pool is not None else rng.integers(0, 256, n)
            data[at:at] = bytes(np.asarray(new, np.uint8))
            done.append(f"insert {bytes(np.asarray(new, np.uint8))!r} at {at}")
        else:  # duplicate a stretch
            n = int(rng.integers(1, 64))
            data[at:at] = data[at:at + n]
            done.append(f"duplicate {n} bytes at {at}")
    return bytes(data), "; ".join(done)


# -- svmlight: against scikit-learn's load_svmlight_file -----------------------------------------
#: Where we refuse what scikit-learn reads, by design (docs/guarantees.md): non-finite labels and
#: values, no feature at all with no declared dimension (scikit-learn makes 0 columns).
SVMLIGHT_OUR_REFUSALS = ("is not finite", "which is not finite", "no feature index found")
#: Where we read what scikit-learn refuses, by design: indices in any order (we sort them;
#: scikit-learn wants them sorted) and indices past 32 bits (it reads them as a C int).
SVMLIGHT_ITS_REFUSALS = ("should be sorted and unique", "Python int too large to convert to C int",
                         "value too large")


def _svmlight_document(rng):
    lines = ["# written by a seeded generator"]
    qid = rng.random() < 0.5
    # numbers near the limits, which a mutation (a duplicated digit, say) pushes over
    extreme = ["1.7976931348623157e308", "5e-324", "0.000001e-99999", "1e99999", "9" * 30]
    for r in range(int(rng.integers(5, 30))):
        cols = np.sort(rng.choice(40, size=int(rng.integers(0, 8)), replace=False)) + 1
        if rng.random() < 0.05:
            cols[-1:] = rng.choice([2**31 - 1, 922337203685477580, 2**63 - 1])
        toks = [rng.choice(["1", "-1", "0", "2.5", "3e1"])]
        if qid:
            toks.append(f"qid:{r // 4 if rng.random() < 0.9 else rng.choice([922337203685477580, -(2**63)])}")
        for c in cols:
            u = rng.random()
            v = repr(float(rng.standard_normal())) if u < 0.6 else rng.choice(["1", "0.5", "-2e-3", "7E5"])
            toks.append(f"{c}:{rng.choice(extreme) if u > 0.99 else v}")
        lines.append(" ".join(toks) + (" # note" if rng.random() < 0.1 else ""))
    return ("\n".join(lines) + "\n").encode()


def _same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def svmlight_case(rng, folder, k):
    from sklearn.datasets import load_svmlight_file

    from dask_kernels.io import SvmlightFormatError, read_svmlight

    data, what = mutate(_svmlight_document(rng), rng)
    path = os.path.join(folder, f"case{k}.svm")
    with open(path, "wb") as f:
        f.write(data)
    blocksize = int(rng.choice([64, 10**6]))  # several byte ranges, or one
    try:
        X, y, q = read_svmlight(path, blocksize=blocksize).compute()
        ours = None
    except SvmlightFormatError as e:
        ours = str(e)
        if not (ours.startswith(f"{path}: line ") and "byte offset" in ours):
            return "failure", f"{what}: unclear error {ours!r}"
    except ValueError as e:
        ours = str(e)
        if not (ours.startswith(path) and "no feature index found" in ours):
            return "failure", f"{what}: {type(e).__name__}: {ours}"
    try:
        Xr, yr, qr = load_svmlight_file(path, zero_based=False, query_id=True)
        theirs = None
    except Exception as e:  # any refusal of the reference
        theirs = f"{type(e).__name__}: {e}"
    if ours is not None:
        if theirs is not None or any(s in ours for s in SVMLIGHT_OUR_REFUSALS):
            return "both refuse" if theirs is not None else "we refuse by design", None
        return "failure", f"{what}: we refuse ({ours}), scikit-learn reads it"
    X.sort_indices()
    if theirs is not None:
        if any(s in theirs for s in SVMLIGHT_ITS_REFUSALS):
            return "it refuses by design", None
        return "failure", f"{what}: we read it, scikit-learn refuses ({theirs})"
    if not (X.shape == Xr.shape and _same_bits(X.indptr, Xr.indptr.astype(X.indptr.dtype))
            and _same_bits(X.indices, Xr.indices.astype(X.indices.dtype)) and _same_bits(X.data, Xr.data)
            and _same_bits(y, yr)):
        return "failure", f"{what}: a different matrix or labels than scikit-learn's"
    # scikit-learn lists the query ids of the rows that have one; we give the others -1
    if not np.array_equal(np.empty(0, np.int64) if q is None else q[q != -1], qr[qr != -1]):
        return "failure", f"{what}: different query ids"
    return "same as scikit-learn", None


# -- saved models and checkpoints: against the object that was saved -----------------------------
_SAVED = {}


def _saved(folder):
    """A saved model (GCWS + SGDClassifier) and a training checkpoint, written once per process."""
    if not _SAVED:
        from sklearn.linear_model import SGDClassifier

        from dask_kernels import GCWS, KernelModel, fit_incremental
        from dask_kernels._npz import load_npz

        rng = np.random.default_rng(0)
        X = rng.random((200, 4))
        y = (X[:, 0] > 0.5).astype(int)
        gcws = GCWS(n_components=16, seed=0).fit(X)
        model = KernelModel(gcws, SGDClassifier(random_state=0).fit(gcws.expand(gcws.transform(X)), y))
        ck = os.path.join(folder, "original.ckpt")
        fit_incremental(SGDClassifier(random_state=0), X, y, feature_map=gcws, block_rows=100, epochs=1,
                        checkpoint=ck, progress=False)
        _SAVED.update(X=X, model=model, dir=model.save(os.path.join(folder, "original.dk")),
                      ckpt=open(ck, "rb").read(), ckpt_content=load_npz(ck))
    return _SAVED


def _same_model(a, b, X):
    ea, eb = a.estimator, b.estimator
    return (a.feature_map.spec() == b.feature_map.spec() and ea.get_params() == eb.get_params()
            and all(_same_bits(np.asarray(getattr(ea, k)), np.asarray(getattr(eb, k)))
                    for k in ("coef_", "intercept_", "classes_"))
            and np.array_equal(a.predict(X), b.predict(X)))


def model_case(rng, folder, k):
    import shutil

    from dask_kernels import load_model

    saved = _saved(folder)
    path = os.path.join(folder, f"case{k}.dk")
    shutil.copytree(saved["dir"], path)
    member = rng.choice(sorted(os.listdir(path)))  # model.json, arrays.npz (GCWS keeps no sidecar)
    with open(os.path.join(path, member), "rb") as f:
        original = f.read()
    data, what = mutate(original, rng)
    what = f"{member}: {what}"
    with open(os.path.join(path, member), "wb") as f:
        f.write(data)
    # the reference for model.json is the JSON it holds: the same object must give the same
    # model, text that is not JSON a refusal; other JSON may be a valid model of its own
    same_meaning = data == original
    if member == "model.json":
        try:
            same_meaning = json.loads(data) == json.loads(original)
        except ValueError:
            same_meaning = None
    try:
        loaded = load_model(path)
    except ValueError as e:
        if path not in str(e):
            return "failure", f"{what}: error naming no file: {e}"
        return ("refused", None) if same_meaning is not True else ("failure", f"{what}: refused an intact file: {e}")
    if same_meaning is None:
        return "failure", f"{what}: loaded a model.json that is not JSON"
    if same_meaning or member != "model.json":  # a binary member: its bytes are checksummed
        if not _same_model(loaded, saved["model"], saved["X"]):
            return "failure", f"{what}: loaded a different model"
        return "same model", None
    return "other valid model", None


def checkpoint_case(rng, folder, k):
    from dask_kernels._npz import load_npz

    saved = _saved(folder)
    path = os.path.join(folder, f"case{k}.ckpt")
    data, what = mutate(saved["ckpt"], rng)
    with open(path, "wb") as f:
        f.write(data)
    try:
        arrays, meta = load_npz(path)
    except ValueError as e:
        if path not in str(e):
            return "failure", f"{what}: error naming no file: {e}"
        return "refused", None
    ref_arrays, ref_meta = saved["ckpt_content"]
    if meta != ref_meta or sorted(arrays) != sorted(ref_arrays) or not all(
            _same_bits(arrays[n], ref_arrays[n]) for n in arrays):
        return "failure", f"{what}: read different arrays or metadata"
    return "same content", None


# -- feature store attributes (the root zarr.json): against the store as written ------------------
def _store(folder):
    if "store" not in _SAVED:
        from dask_kernels import GCWS, featurize, open_store

        rng = np.random.default_rng(8)
        X = np.abs(rng.standard_normal((120, 5)))
        path = os.path.join(folder, "original.zarr")
        featurize(X, GCWS(n_components=8, seed=4).fit(X[:1]), labels=np.arange(120) % 3, store=path, block_rows=40,
                  progress=False)
        st = open_store(path)
        _SAVED["store"] = (path, st.spec, st.features.compute(), st.labels.compute())
    return _SAVED["store"]


def store_case(rng, folder, k):
    import shutil

    from dask_kernels import open_store

    original, spec, features, labels = _store(folder)
    path = os.path.join(folder, f"case{k}.zarr")
    shutil.copytree(original, path)
    meta = os.path.join(path, "zarr.json")
    with open(meta, "rb") as f:
        data, what = mutate(f.read(), rng)
    with open(meta, "wb") as f:
        f.write(data)
    try:
        st = open_store(path)
        same = (st.spec == spec and _same_bits(st.features.compute(), features)
                and _same_bits(st.labels.compute(), labels))
    except ValueError as e:
        if path not in str(e):
            return "failure", f"{what}: error naming no store: {type(e).__name__}: {e}"
        return "refused", None
    return ("same data", None) if same else ("failure", f"{what}: opened with other data")


TARGETS = {"svmlight": svmlight_case, "model": model_case, "checkpoint": checkpoint_case, "store": store_case}


def main(target, seed, n, folder):
    import dask

    dask.config.set(scheduler="sync")
    case = TARGETS[target]
    rng = np.random.default_rng(seed)
    counts, failures = {}, []
    for k in range(n):
        sys.stderr.write(f"case {k}\n")  # the last one names the case if the process dies
        try:
            outcome, detail = case(rng, folder, k)
        except Exception:
            outcome, detail = "failure", traceback.format_exc().strip().splitlines()[-1]
        counts[outcome] = counts.get(outcome, 0) + 1
        if detail is not None:
            failures.append(f"case {k}: {detail}")
    print(json.dumps({"counts": counts, "failures": failures[:20]}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
