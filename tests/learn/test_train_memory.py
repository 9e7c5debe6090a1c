"""Training memory does not grow with the row count: the held-out rows scored are capped and
scored a chunk at a time, and a client holds the step training and the next one."""

import json
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from distributed import Client
from sklearn.linear_model import SGDClassifier

from dask_kernels import fit_incremental
from dask_kernels.learn import ArraySource, remote, shuffle
from dask_kernels.learn.metrics import cross_entropy, erp, evaluate, proba_terms
from dask_kernels.learn.shuffle import held_out_cap, held_out_rows, scored_rows

D = 16


def _sgd():
    return SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="constant", eta0=0.01, random_state=0)


def _data(n):
    X = np.random.default_rng(0).random((n, D), dtype=np.float32)
    return X, (X[:, 0] + X[:, 1] > 1.0).astype(np.int64)


# Measured in a process of its own: tracemalloc counts every thread's allocations, and threads that
# earlier tests left in a pytest worker would put theirs into the peak by timing
_PEAKS = """
import json, tracemalloc
import numpy as np
from sklearn.linear_model import SGDClassifier
from dask_kernels import fit_incremental
from dask_kernels.learn import shuffle

shuffle.HELD_OUT_BYTES = 2**16

def peak(n):
    X = np.random.default_rng(0).random((n, %d), dtype=np.float32)
    y = (X[:, 0] + X[:, 1] > 1.0).astype(np.int64)
    est = SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="constant", eta0=0.01, random_state=0)
    tracemalloc.start()
    try:
        fit_incremental(est, X, y, block_rows=5000, shuffle_window=2, epochs=1, progress=False, prefetch=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

peak(25_000)  # compiled and imported before measuring
print(json.dumps([peak(100_000), peak(400_000)]))
""" % D


def test_fit_incremental_peak_memory_does_not_grow_with_the_rows():
    # Peak bytes Python and NumPy allocate while fit_incremental trains one epoch on rows made
    # before (blocks of 5000 rows, a window of 2 blocks: none kept), with a held-out set of ~900
    # rows scored (64 KiB of 64-byte rows and their labels). Before the cap the whole held-out set
    # (10% of the rows, 72 bytes each) grew the peak by 2.9 MB from 10^5 to 4x10^5 rows (with the
    # ERP's and the predictions' arrays); what is left that grows with the 60 more blocks (their
    # bounds, the epoch's order, the sample's pieces) took 113 KB.
    # Read in order (prefetch=False): read ahead in a thread, whether the next window (640 KB)
    # is in memory with the current one depends on timing, which no row count decides
    out = subprocess.run([sys.executable, "-c", _PEAKS], capture_output=True, text=True, check=True)
    small, large = json.loads(out.stdout.splitlines()[-1])
    assert large - small < 2**19, (small, large)


def test_every_held_out_row_is_scored_up_to_the_cap():
    # at or below the cap: exactly the held-out rows of every block, as before the cap existed
    bounds = [(a, min(a + 1000, 20_500)) for a in range(0, 20_500, 1000)]
    held = [held_out_rows(3, i, b - a, 0.1) for i, (a, b) in enumerate(bounds)]
    total = sum(r.size for r in held)
    for cap in (total, total + 1, 10**9):
        got = scored_rows(3, bounds, 0.1, cap)
        assert [i for i, _ in got] == list(range(len(bounds)))
        assert all(np.array_equal(r, h) for (_, r), h in zip(got, held))


def test_above_the_cap_a_uniform_sample_of_exactly_cap_held_out_rows():
    bounds = [(a, a + 1000) for a in range(0, 50_000, 1000)]
    cap = 5000
    got = scored_rows(7, bounds, 0.5, cap)
    assert scored_rows(7, bounds, 0.5, cap)[13][1].tolist() == got[13][1].tolist()  # a function of the seed
    assert [i for i, _ in got] == list(range(len(bounds)))
    assert sum(r.size for _, r in got) == cap
    counts = []
    for i, rows in got:
        held = held_out_rows(7, i, 1000, 0.5)
        assert np.all(np.isin(rows, held)) and np.all(np.diff(rows) > 0)  # held-out rows, each once, in order
        counts.append(rows.size / held.size)
    # each block's share of its held-out rows is hypergeometric around cap / held (~0.2, sd ~0.018
    # for ~500 held-out rows a block): within 6 sd everywhere, so no block is favoured
    share = cap / sum(held_out_rows(7, i, 1000, 0.5).size for i in range(len(bounds)))
    assert np.max(np.abs(np.array(counts) - share)) < 6 * np.sqrt(share * (1 - share) / 500)


def test_the_cap_samples_the_score_only_training_is_unchanged(monkeypatch):
    X, y = _data(40_000)
    kw = dict(block_rows=5000, shuffle_window=2, epochs=1, progress=False)
    whole = fit_incremental(_sgd(), X, y, **kw)
    src = ArraySource(X, y, block_rows=5000)
    monkeypatch.setattr(shuffle, "HELD_OUT_BYTES", 500 * (src.row_bytes() + 8))
    assert held_out_cap(src) == 500
    sampled = fit_incremental(_sgd(), X, y, **kw)
    # the rows held out (4000) still do not train: the same steps, bitwise the same model
    assert np.array_equal(whole.estimator.coef_, sampled.estimator.coef_)
    assert np.array_equal(whole.estimator.intercept_, sampled.estimator.intercept_)
    # the score of 500 of them: within 5 standard errors of the whole set's
    a, b = whole.history[0]["accuracy"], sampled.history[0]["accuracy"]
    assert a != b and abs(a - b) < 5 * np.sqrt(a * (1 - a) / 500), (a, b)


def test_held_out_probabilities_are_not_kept_for_every_row():
    # 40,000 held-out rows of 64 classes: their probabilities take 20 MB (float64), and scoring
    # them whole took several such arrays at once (the parts, their concatenation, the ERP's
    # temporaries). Scored a block of 500 rows at a time, only two floats a row are kept (640 KB)
    # beside one block's probabilities (256 KB and the ERP's temporaries of it).
    rng = np.random.default_rng(0)
    X, Xv = rng.random((6400, 4)), rng.random((40_000, 4))
    y, yv = np.arange(6400) % 64, rng.integers(0, 64, 40_000)
    kw = dict(block_rows=500, epochs=1, schedule=None, progress=False)
    fit_incremental(_sgd(), X, y, validation_data=(Xv[:1000], yv[:1000]), **kw)  # compiled and imported
    tracemalloc.start()
    try:
        model = fit_incremental(_sgd(), X, y, validation_data=(Xv, yv), **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # what the run holds besides the scoring: the validation rows in stored form (1.3 MB, read by
    # block), their labels, predictions and the terms (~1 MB), the model (64 x 4 floats)
    assert peak < 8 * 2**20, peak
    whole = erp(yv, model.predict_proba(Xv), model.estimator.classes_)  # all rows' probabilities at once
    assert abs(model.history[0]["erp"] - whole) <= 1e-12 * whole


def test_held_out_terms_scored_in_chunks_give_bitwise_the_metrics_of_all_rows():
    rng = np.random.default_rng(1)
    proba = rng.dirichlet(np.ones(12), size=3001)
    proba[::7, 3] = 0.0  # 0 log 0 = 0
    y, classes = rng.integers(0, 12, 3001) * 10, np.arange(12) * 10
    pred = classes[np.argmax(proba, axis=1)]
    whole = evaluate("classifier", y, pred, proba, classes)
    assert whole["log_loss"] == cross_entropy(y, proba, classes) and whole["erp"] == erp(y, proba, classes)
    cuts = [0, 1, 2, 500, 1999, 3001]  # chunks of 1, 1, 498, 1499 and 1002 rows
    parts = [proba_terms(y[a:b], proba[a:b], classes) for a, b in zip(cuts, cuts[1:])]
    terms = tuple(np.concatenate(t) for t in zip(*parts))
    assert evaluate("classifier", y, pred, classes=classes, terms=terms) == whole


def test_a_client_holds_the_step_training_and_the_next_one_not_every_step_prepared(tmp_path, local_cluster):
    # 8 steps of 4000 rows x 64 float64 (2 MB each) from a memory-mapped file (it travels as its
    # path), trained slowly: the workers prepare remote.AHEAD = 4 steps ahead, and every one of
    # them used to be transferred to the client as soon as it was ready (6 steps' memory with
    # the one training and the last one trained); the client now receives FETCH_AHEAD = 1 ahead.
    # (Straight from the workers, as the CLI's client does: through the scheduler, here in this
    # process, a step in transit is also the scheduler's copy.)
    rng = np.random.default_rng(0)
    X = rng.random((32_000, 64))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    X, y = (np.load(tmp_path / f"{n}.npy", mmap_mode="r") for n in ("X", "y"))
    step = 4000 * 64 * 8
    kw = dict(block_rows=4000, shuffle_window=4, epochs=1, validation_fraction=0, progress=False)
    with Client(local_cluster, direct_to_workers=True):
        fit_incremental(_sgd(), X, y, **kw)  # compiled and imported
        tracemalloc.start()
        try:
            fit_incremental(_sgd(), X, y, callback=lambda _: time.sleep(0.5), **kw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 3 * step, peak / step
    assert remote.FETCH_AHEAD == 1


_AFTER_TRAIN = """
import sys
import numpy as np
import psutil
from dask_kernels.cli import main

assert main(sys.argv[1:]) == 0
rss = lambda: psutil.Process().memory_info().rss
a = np.ones(30 * 2**20, np.uint8)
del a  # glibc then serves blocks of up to this size from its heaps, unless told otherwise
before = rss()
steps = [np.ones(30 * 2**20, np.uint8) for _ in range(4)]
kept = [np.ones(1000) for _ in range(1000)]  # 8 MB after them: a heap cannot shrink past it
del steps
print((rss() - before) / 2**20)  # what is left of the steps, and the 8 MB kept
"""


def test_the_train_commands_process_gives_freed_steps_back_to_the_system(tmp_path):
    # four 30 MB blocks (four training steps) freed: with glibc's default thresholds its heaps kept
    # them (128 MiB); after `dask-kernels train` has run in a process they are unmapped when freed
    X, y = _data(2000)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    out = subprocess.run([sys.executable, "-c", _AFTER_TRAIN, "train", str(tmp_path / "X.npy"), "--labels",
                          str(tmp_path / "y.npy"), "-o", str(tmp_path / "m"), "--epochs", "1", "--no-progress"],
                         capture_output=True, text=True, check=True)
    retained = float(out.stdout.splitlines()[-1])
    assert retained < 16, retained
