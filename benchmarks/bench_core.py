"""Held-out accuracy of CoRE hashing against GCWS and NRFF on sparse, text-like data, out of core.

Data (text-like: many dimensions, few nonzeros per row): the language of a word. Words come from
Debian's word lists (``apt-get install wamerican wngerman wfrench witalian wspanish wportuguese
wdutch``: /usr/share/dict), ``--per-language`` distinct lowercase words of each of 7 languages
drawn with a fixed seed. Each word is the bag of its character 1- to 4-grams (with ``^`` and
``$`` marking its ends), hashed (blake2b) into ``--dim`` columns: about 25 nonzeros per row in
16384 dimensions. Words seen in two languages are dropped.

Every map's features of the training rows are written to a Zarr feature store
(``dask_kernels.featurize`` on the CSR rows) and a linear model is trained on them with
``fit_incremental``: the recipe of ``bench_accuracy.py`` (its ``train``: SGDClassifier, log loss,
eta0 = s / E||x||^2 with s in {1, 0.1} picked on a 10% validation split of the training rows,
early stopping). Test accuracy on 25% untouched rows.

Maps: CoRE type 1 and type 2 (b = 8), GCWS (b = 8), NRFF with the cosine-RBF bandwidth tuned by
an exact SVM on a subsample (``bench_accuracy.references``-style tuning); references in the same
run: exact CoRE-kernel (type 1 and 2) and cosine-RBF SVMs on that subsample, and linear SGD on
the raw n-gram counts (same recipe, features in memory).

Run: ``python benchmarks/bench_core.py [--quick]``. Writes ``benchmarks/results/core.json``
(``core_quick.json`` with ``--quick``).
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import scipy.sparse as sp  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from bench_accuracy import cosine_rbf, learner, train, tune_svm  # noqa: E402

import dask_kernels  # noqa: E402
from dask_kernels import CoRE, GCWS, NRFF, core_kernel  # noqa: E402
from dask_kernels.exact.pairwise import unit_rows  # noqa: E402

LANGUAGES = {"english": "american-english", "german": "ngerman", "french": "french", "italian": "italian",
             "spanish": "spanish", "portuguese": "portuguese", "dutch": "dutch"}
DICT_DIR = "/usr/share/dict"


# -- data ---------------------------------------------------------------------------------------
def _words(path, n, rng):
    with open(path, encoding="utf-8", errors="replace") as f:
        words = sorted({w.strip().lower() for w in f if w.strip() and "'" not in w and " " not in w.strip()})
    words = [w for w in words if 3 <= len(w) <= 20]
    return [words[i] for i in np.sort(rng.choice(len(words), size=min(n, len(words)), replace=False))]


def _ngram_columns(word, dim):
    s = f"^{word}$"
    grams = [s[a : a + n] for n in range(1, 5) for a in range(len(s) - n + 1)]
    return [int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little") % dim for g in grams]


def word_languages(per_language, dim, seed=0):
    """CSR of n-gram counts (n_words, dim) and language labels; see the module docstring."""
    missing = [f for f in LANGUAGES.values() if not os.path.exists(os.path.join(DICT_DIR, f))]
    if missing:
        sys.exit(f"bench_core: word lists missing in {DICT_DIR}: {missing}. Install them with "
                 "`apt-get install wamerican wngerman wfrench witalian wspanish wportuguese wdutch`.")
    rng = np.random.default_rng(seed)
    lists = {lang: _words(os.path.join(DICT_DIR, f), per_language, rng) for lang, f in LANGUAGES.items()}
    seen = {}
    for lang, ws in lists.items():
        for w in ws:
            seen.setdefault(w, set()).add(lang)
    rows, cols, labels = [], [], []
    for label, (lang, ws) in enumerate(lists.items()):
        for w in ws:
            if len(seen[w]) > 1:
                continue
            c = _ngram_columns(w, dim)
            rows.extend([len(labels)] * len(c))
            cols.extend(c)
            labels.append(label)
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(labels), dim))  # duplicates summed
    X.sum_duplicates()
    return X, np.asarray(labels, dtype=np.int64)


# -- the benchmark --------------------------------------------------------------------------------
def exact_references(Xtr, ytr, Xte, yte, n_exact, seed=0):
    idx = np.sort(np.random.default_rng(seed).choice(Xtr.shape[0], size=min(n_exact, Xtr.shape[0]), replace=False))
    Xs, ys = Xtr[idx], ytr[idx]
    Cs = [1.0, 10.0, 100.0]
    out = {"n_exact": len(idx)}
    for kind in (1, 2):
        fn = lambda A, B, _, kind=kind: core_kernel(A, B, type=kind)  # noqa: E731
        out[f"core{kind}"], _, _ = tune_svm(fn, fn, {"param": [None], "C": Cs}, Xs, ys, Xte, yte)
    dense = lambda A, B, g: cosine_rbf(A.toarray(), B.toarray(), g)  # noqa: E731
    out["cos"], out["cos_gamma"], _ = tune_svm(dense, dense, {"param": [0.25, 0.5, 1.0, 2.0, 4.0, 8.0], "C": Cs},
                                               Xs, ys, Xte, yte)
    return out


def store_of(Xtr, ytr, fmap, block_rows, tmp, name):
    return dask_kernels.featurize(Xtr, fmap, labels=ytr, store=os.path.join(tmp, f"{name}.zarr"),
                                  chunks=block_rows, progress=False)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    p.add_argument("--per-language", type=int, default=None, help="words per language (default 3000; quick 800)")
    p.add_argument("--dim", type=int, default=2**14, help="hashed n-gram dimensions (default 16384)")
    args = p.parse_args(argv)
    ks = [64, 256] if args.quick else [64, 256, 1024]
    per = args.per_language or (800 if args.quick else 3000)
    epochs = 5 if args.quick else 10
    n_exact = 1000 if args.quick else 2000
    block_rows = 2000

    t0 = time.perf_counter()
    X, y = word_languages(per, args.dim)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    nnz = np.diff(X.indptr)
    print(f"== language of a word: {Xtr.shape[0]} training rows, {Xte.shape[0]} test rows, {X.shape[1]} "
          f"dimensions, {nnz.mean():.1f} nonzeros per row (max {nnz.max()}), {len(LANGUAGES)} classes "
          f"(data {time.perf_counter() - t0:.1f} s)")
    t = time.perf_counter()
    ref = exact_references(Xtr, ytr, Xte, yte, n_exact)
    print(f"exact SVMs on {ref['n_exact']} training rows: {time.perf_counter() - t:.1f} s "
          f"(cosine-RBF gamma {ref['cos_gamma']:.3g})", flush=True)

    makers = {
        "CoRE type 1 (b=8)": lambda k: CoRE(n_components=k, type=1, bits=8, seed=0),
        "CoRE type 2 (b=8)": lambda k: CoRE(n_components=k, type=2, bits=8, seed=0),
        "GCWS (b=8)": lambda k: GCWS(n_components=k, bits=8, seed=0),
        "NRFF (cosine-RBF)": lambda k: NRFF(n_components=k, gamma=ref["cos_gamma"], seed=0),
    }
    tmp = tempfile.mkdtemp(prefix="bench_core_")
    rows, secs = {}, {}
    try:
        for label, make in makers.items():
            rows[label], secs[label] = [], []
            for k in ks:
                fmap = make(k).fit(Xtr)
                t = time.perf_counter()
                store = store_of(Xtr, ytr, fmap, block_rows, tmp, f"{fmap.method}-{len(rows)}-{k}")
                t_feat = time.perf_counter() - t
                model = train(store, epochs)
                rows[label].append(float(model.score(Xte, yte)))
                secs[label].append(time.perf_counter() - t)
                print(f"  {label:<20} k={k:<5} test acc {rows[label][-1]:.4f}  epochs {len(model.history):2d}  "
                      f"featurize {t_feat:5.1f} s  total {secs[label][-1]:5.1f} s", flush=True)
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp, exist_ok=True)
        # linear SGD on the raw counts scaled to unit rows (eta0 = 1 / E||x||^2 = 1)
        raw = dask_kernels.fit_incremental(learner(1.0), unit_rows(Xtr), ytr, epochs=epochs, validation_fraction=0.1,
                                           n_iter_no_change=3, seed=0, block_rows=block_rows, progress=False)
        raw_acc = float(raw.estimator.score(unit_rows(Xte), yte))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n{'method':<30}" + "".join(f"{'k=' + str(k):>9}" for k in ks))
    for label, accs in rows.items():
        print(f"{label:<30}" + "".join(f"{a:9.4f}" for a in accs))
    for label, acc in [("linear SGD, raw n-grams", raw_acc), ("CoRE type 1 SVM, exact*", ref["core1"]),
                       ("CoRE type 2 SVM, exact*", ref["core2"]), ("cosine-RBF SVM, tuned*", ref["cos"])]:
        print(f"{label:<30}" + f"{acc:9.4f}" * len(ks))
    print(f"* precomputed kernel on {ref['n_exact']} of the {Xtr.shape[0]} training rows "
          f"(the hashed maps train on all of them)")
    print(f"total {time.perf_counter() - t0:.0f} s")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", "core_quick.json" if args.quick else "core.json")
    with open(out, "w") as f:
        json.dump({"ks": ks, "accuracy": rows, "seconds": secs, "raw": raw_acc, **ref,
                   "rows": {"train": int(Xtr.shape[0]), "test": int(Xte.shape[0])}, "dim": args.dim,
                   "per_language": per, "quick": args.quick}, f, indent=1)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
