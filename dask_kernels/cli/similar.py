"""``dask-kernels similar STORE [OTHER] --threshold T -o PAIRS.parquet``: all pairs of rows at GMM
similarity >= T, from the codes of GCWS feature stores (within STORE, or STORE x OTHER).

Writes a Parquet dataset (a folder) with columns ``i``, ``j`` (global row numbers, ``i < j``
within one store), ``estimate`` (the GMM estimate from all the codes) and, with ``--raw ROWS.npy``
(the rows the store was featurized from), ``exact`` (their exact GMM, on which the pairs are kept). See
:func:`dask_kernels.similarity.similarity_join`.
"""

from ._args import UsageError, byte_size, fraction, positive_int
from ._cluster import add_cluster_arguments, client_for

help = "all pairs of rows at GMM similarity >= a threshold, from GCWS feature stores (LSH join on Dask)"
#: Suffixes of other formats than the Parquet dataset -o is written as.
OTHER_FORMATS = (".csv", ".csv.gz", ".tsv", ".txt", ".json", ".npy", ".npz", ".zarr", ".xlsx")


def add_arguments(parser):
    parser.add_argument("store", help="GCWS feature store (path, file:// or fsspec URL)")
    parser.add_argument("other", nargs="?", help="a second store of the same map: pairs across the two stores")
    parser.add_argument("--threshold", type=fraction, required=True, help="GMM similarity in (0, 1), e.g. 0.8")
    parser.add_argument("-o", "--output", required=True, help="Parquet dataset (folder) to write the pairs to; "
                                                               "must not exist (see --overwrite)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUTPUT if it holds pairs written by dask-kernels similar (anything else is "
                             "refused, never replaced)")
    parser.add_argument("--bands", type=positive_int, help="LSH bands (default: chosen from the threshold)")
    parser.add_argument("--rows", type=positive_int, help="codes per band (with --bands)")
    parser.add_argument("--min-recall", type=fraction, default=None,
                        help="least chance that a pair at the threshold becomes a candidate, for the default "
                             "bands (default 0.999)")
    parser.add_argument("--raw", metavar="ROWS.npy",
                        help="the raw rows the store was featurized from (.npy, one per row of STORE): pairs "
                             "are then kept on their exact GMM (column exact), of the rows centred or scaled "
                             "as the store's map hashed them; each task reads its own rows")
    parser.add_argument("--other-raw", metavar="ROWS.npy", help="the raw rows of OTHER (with --raw)")
    parser.add_argument("--max-bucket", type=positive_int, default=None,
                        help="pairs per member of an oversized bucket (default 64); raise it when many rows are "
                             "alike: larger buckets are cut and lose pairs")
    parser.add_argument("--pass-memory", type=byte_size, default=None, metavar="SIZE",
                        help="bytes of band records held per pass, e.g. 256MiB (the default) or 1GiB, at least "
                             "1MiB; a plain number is MiB: the join runs in passes of about this size, so the "
                             "workers' memory does not grow with the rows")
    add_cluster_arguments(parser)
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: a bar on a terminal, a plain line every few seconds otherwise)")


def run(args):
    import time

    import dask.dataframe as dd

    from .._progress import wait_futures
    from ..pipeline import open_store
    from ..similarity import similarity_join
    from ..similarity.banding import MIN_RECALL
    from ..similarity._source import Codes, as_rows
    from ..similarity.join import MAX_BUCKET, MIN_PASS_MEMORY, PASS_MEMORY
    from ._owned import check_replaceable, publish, write_marker, writer_of, written_aside
    from ._paths import exists, existing, is_store, normalize

    stores = []
    for flag, path in (("store", args.store), ("other", args.other)):
        if path is None:
            continue
        p = existing(path, flag)
        if not is_store(p):
            raise UsageError(f"{flag} {path}: not a dask_kernels feature store")
        stores.append(open_store(p))
    if not 0.0 < args.threshold < 1.0:
        raise UsageError(f"--threshold {args.threshold}: expected a similarity strictly between 0 and 1")
    if (args.bands is None) != (args.rows is None):
        raise UsageError("--bands and --rows go together: give both or neither")
    if args.min_recall is not None and not 0.0 < args.min_recall < 1.0:
        raise UsageError(f"--min-recall {args.min_recall}: expected a chance strictly between 0 and 1")
    if args.min_recall is not None and args.bands is not None:
        raise UsageError("--min-recall chooses the bands: give it or --bands/--rows, not both")
    if args.pass_memory is not None and args.pass_memory < MIN_PASS_MEMORY:
        raise UsageError(f"--pass-memory {args.pass_memory} bytes: expected at least 1MiB (smaller passes cost more "
                         "in per-task overhead than they save)")
    if (args.other_raw is not None) != (args.raw is not None and len(stores) > 1):
        raise UsageError("--raw and --other-raw: give the raw rows of every store searched (--other-raw only "
                         "with OTHER), or none")
    raw = [None if path is None else existing(path, flag)
           for flag, path in (("--raw", args.raw), ("--other-raw", args.other_raw))]
    for flag, path, store in (("--raw", raw[0], stores[0]), ("--other-raw", raw[1], stores[-1])):
        if path is not None:  # the join's own check (rows, width), naming the flag, before any cluster starts
            as_rows(path, Codes(store.features, None, store.spec), flag)
    output = normalize(args.output)
    name = args.output.rstrip("/").lower()
    if name.endswith(OTHER_FORMATS):  # a folder of Parquet files named pairs.csv reads as no CSV
        suffix = next(x for x in OTHER_FORMATS if name.endswith(x))
        raise UsageError(f"-o {args.output}: similar writes the pairs as a Parquet dataset (a folder), not a "
                         f"{suffix} file; name it NAME.parquet (pandas.read_parquet reads it)")
    if exists(output):
        if not args.overwrite:
            raise UsageError(f"-o {args.output}: already exists; choose another path, remove it, or give "
                             "--overwrite if dask-kernels similar wrote it")
        check_replaceable(output, "parquet", None, "similar")  # before any work
    with client_for(args) as client:
        pairs = similarity_join(stores[0], args.threshold, stores[1] if len(stores) > 1 else None,
                                bands=args.bands, rows=args.rows, max_bucket=args.max_bucket or MAX_BUCKET,
                                min_recall=MIN_RECALL if args.min_recall is None else args.min_recall,
                                X=raw[0], other_X=raw[1], pass_memory=args.pass_memory or PASS_MEMORY)
        t0 = time.perf_counter()
        replace_for = None if args.overwrite else False
        # a failed or interrupted join leaves no partial pairs at -o
        with written_aside(output, "parquet", replace_for, "similar") as tmp:
            future = client.compute(pairs.to_parquet(tmp, write_index=False, compute=False))
            if not args.no_progress:
                wait_futures([future], label="similar")
            future.result()
            write_marker(tmp, "parquet", writer_of(None), output, "similar")
            publish(tmp, output, "parquet", replace_for, "similar")
        n = len(dd.read_parquet(output))
        seconds = time.perf_counter() - t0
    kept_on = "GMM" if raw[0] is not None else "estimated GMM"  # (without --raw, on the codes' estimate)
    print(f"{output}: {n} pairs at {kept_on} >= {args.threshold:g} among {stores[0].n_rows} rows"
          + (f" x {stores[1].n_rows} rows" if len(stores) > 1 else "") + f"; {seconds:.1f} s")
    return 0
