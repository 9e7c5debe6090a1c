"""Peak memory of ``dask-kernels train`` as the row count grows: it should not grow with it.

    python benchmarks/bench_train_memory.py [--rows 1000000 4000000 16000000] [--workers 2]
        [--workdir DIR] [--no-local]

For each row count: the dense rows of :mod:`bench_scale` (32 float32 columns, 4 classes, int64
labels) are written to ``X.npy``/``y.npy`` and featurized into a GCWS store of 128 uint8 codes
(``dask-kernels featurize``, the peer: its command's memory does not grow with the rows), then
``dask-kernels train STORE -o MODEL --epochs 1`` runs on it in this machine's process (dask's
local scheduler) and with ``--workers W`` (a LocalCluster). Every command is a fresh process
sampled every 0.2 s (:class:`bench_scale.Sampler`): the table gives its peak RSS, the workers'
peak RSS, the ratio of the train command's peak RSS to featurize's at the same size, and the
growth in bytes per row between consecutive sizes (about 0 when memory is bounded). The load
average is printed with each run. With ``--workdir`` the inputs and stores are kept and reused
by the next run (written again only when missing); without it a temporary folder is removed at
exit. Disk: about 150 bytes a row (``X.npy`` 128, the store ~20).
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_scale import run, summary, write_dense  # noqa: E402


def _mb(b):
    return b / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10**6, 4 * 10**6, 16 * 10**6])
    ap.add_argument("--workers", type=int, default=2, help="workers of the cluster run (0: none)")
    ap.add_argument("--no-local", action="store_true", help="skip the run without a cluster")
    ap.add_argument("--workdir", help="inputs and stores (kept and reused); default a temporary folder")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="bench-train-memory-")
    os.makedirs(work, exist_ok=True)
    cli = [os.path.join(os.path.dirname(sys.executable), "dask-kernels")]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    table = []
    try:
        for n in sorted(args.rows):
            X, y, store = (os.path.join(work, f"{name}{n}{ext}") for name, ext in
                           (("X", ".npy"), ("y", ".npy"), ("dense", ".zarr")))
            feat = None
            if not os.path.exists(os.path.join(store, "zarr.json")):
                write_dense(X, y, n)
                feat = summary("featurize", n, run(cli + ["featurize", X, store, "--labels", y, "--param",
                                                           "n_components=128", "--overwrite", "--no-progress"], env))
                os.remove(X)
                os.remove(y)
                print(f"featurize {n}: peak RSS {_mb(feat['rss']):.0f} MB (load {feat['load']:.1f})", flush=True)
            runs = ([] if args.no_local else [("local", [])]) + \
                ([(f"{args.workers} workers", ["--workers", str(args.workers)])] if args.workers else [])
            for name, extra in runs:
                r = summary(f"train {name}", n, run(cli + ["train", store, "-o", os.path.join(work, "model"),
                                                           "--epochs", "1", "--overwrite", "--no-progress"]
                                                     + extra, env))
                r["featurize_rss"] = None if feat is None else feat["rss"]
                table.append(r)
                print(f"{r['name']} {n}: {r['seconds']:.0f} s, peak RSS {_mb(r['rss']):.0f} MB, workers "
                      f"{[round(_mb(w)) for w in r['worker_rss']]} MB (load {r['load']:.1f})", flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'run':<18}{'rows':>12}{'seconds':>9}{'peak RSS MB':>13}{'workers MB':>16}{'/ featurize':>13}"
          f"{'B/row growth':>14}{'load':>7}")
    last = {}
    for r in table:
        prev = last.get(r["name"])
        growth = "" if prev is None else f"{(r['rss'] - prev['rss']) / (r['rows'] - prev['rows']):.1f}"
        ratio = "" if not r["featurize_rss"] else f"{r['rss'] / r['featurize_rss']:.2f}"
        workers = "/".join(str(round(_mb(w))) for w in r["worker_rss"]) or "-"
        print(f"{r['name']:<18}{r['rows']:>12}{r['seconds']:>9.0f}{_mb(r['rss']):>13.0f}{workers:>16}{ratio:>13}"
              f"{growth:>14}{r['load']:>7.1f}")
        last[r["name"]] = r


if __name__ == "__main__":
    main()
