"""Randomized kill test of a training run: SIGKILL at seeded random moments of a checkpointed
``fit_incremental`` run (mid-block, mid-checkpoint-write, between epochs), each followed by a
re-run that resumes from the checkpoint; the final coefficients are bitwise identical to an
uninterrupted run.

A runner process imports everything once and forks each run, so a run starts in microseconds
and the kills land in training, not in imports. The forked runs start from a single-threaded
process (the runner), which is what makes forking safe. Each run reports every training step
through a pipe; the runner kills it after a seeded random number of steps plus a random part of
the next one, so where the kills land does not depend on how fast (or loaded) the machine is.
"""

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILLS = 20

RUNNER = r"""
import json, os, signal, sys, time
import numpy as np
from sklearn.linear_model import SGDClassifier
from dask_kernels import GCWS, fit_incremental
from dask_kernels._npz import load_npz

out, kills_wanted, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 5))
y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5).astype(int)   # 3 classes
gcws = GCWS(n_components=16, seed=0).fit(X)

def run(ck, started=None):
    def cb(info):  # one byte per training step: the runner's clock
        if started is not None:
            os.write(started, b".")
    est = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.05, average=True, random_state=0)
    return fit_incremental(est, X, y, feature_map=gcws, block_rows=50, epochs=3, seed=4, validation_fraction=0.1,
                           checkpoint=ck, checkpoint_every=1, callback=cb, progress=False)

def save(model, name):
    e = model.estimator
    np.savez(os.path.join(out, name), coef=e.coef_, intercept=e.intercept_, t=np.array(e.t_),
             actions=np.array([str(r.get("action")) for r in model.history]),
             eta0=np.array([r.get("eta0") for r in model.history], dtype=float))

def in_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fn(w)
        finally:
            os._exit(0)
    os.close(w)
    return pid, r

def ticks(r, n):  # read up to n step ticks: (ticks read, seconds of the last step or None)
    seen, last, step = 0, None, None
    while seen < n:
        data = os.read(r, 64)
        if not data:
            break  # the run ended first
        now = time.perf_counter()
        if last is not None:
            step = (now - last) / len(data)
        last, seen = now, seen + len(data)
    return seen, step

pid, r = in_child(lambda w: save(run(os.path.join(out, "ref.ckpt"), w), "ref.npz"))
t0 = time.perf_counter()
n_ref, _ = ticks(r, 10**9)
os.close(r)
os.waitpid(pid, 0)
block = (time.perf_counter() - t0) / max(n_ref, 1)   # one step's training + checkpoint, on average

ck = os.path.join(out, "run.ckpt")
pick = np.random.default_rng(seed)
kills, positions, lives = 0, [], 0
while kills < kills_wanted and lives < 4 * kills_wanted:
    lives += 1
    pid, r = in_child(lambda w: run(ck, w))
    want = int(pick.integers(1, 13))       # ~6 steps a run: the kills span the epochs
    seen, step = ticks(r, want)
    if seen == want:
        time.sleep(pick.uniform(0.0, step or block))  # mid-step: in the SGD update or the checkpoint write
    os.kill(pid, signal.SIGKILL)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        kills += 1
    if os.path.exists(ck):
        loop = load_npz(ck)[1]["loop"]
        positions.append([loop["epoch"], loop["position"]])
os.waitpid(in_child(lambda w: save(run(ck), "resumed.npz"))[0], 0)
print(json.dumps({"kills": kills, "lives": lives, "positions": positions, "block_seconds": block,
                  "leftovers": sorted(set(os.listdir(out)) - {"ref.ckpt", "ref.npz", "run.ckpt", "resumed.npz"})}))
"""


def test_sigkilled_training_resumes_to_identical_coefficients(tmp_path):
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path), str(KILLS), "20261122"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["kills"] >= KILLS, info
    pos = [tuple(p) for p in info["positions"]]
    assert pos == sorted(pos), pos                 # every re-run resumed: progress never goes back
    assert len(set(pos)) >= KILLS // 2, pos        # and the kills landed at many different points
    assert any(p[1] > 0 for p in pos) and pos[-1][0] >= 1, pos  # mid-epoch, and past an epoch end
    ref, res = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "resumed.npz")
    for key in ("coef", "intercept", "t", "actions", "eta0"):
        assert np.array_equal(ref[key], res[key]), key
    assert info["leftovers"] == [], info            # temp files of killed writers were cleaned up
    print(f"{info['kills']} kills in {info['lives']} runs, block {info['block_seconds'] * 1e3:.1f} ms, "
          f"checkpoint positions {pos}")
