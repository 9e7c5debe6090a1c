"""``dask-kernels info STORE``: what a feature store holds and whether it is whole.

Reads the store's attributes and done records (cheap); ``--verify`` also reads every block and
checks it against its checksums and done record. Exit status 0 for a complete store whose
blocks are all done (and verified, with ``--verify``), 1 otherwise, so scripts can test it.
"""

import json

from ._args import UsageError

help = "show a feature store's rows, blocks, map spec, completeness and integrity"


def add_arguments(parser):
    parser.add_argument("store", help="feature store (path, file:// or fsspec URL)")
    parser.add_argument("--verify", action="store_true", help="read every block and check its checksums")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")


def summary(store, verify=False):
    """The dict ``info`` prints."""
    done = store.done
    out = {
        "path": store.path,
        "rows": store.n_rows,
        "width": int(store.features.shape[1]),
        "dtype": str(store.features.dtype),
        "blocks": store.n_blocks,
        "block_rows": store.block_rows,
        "blocks_done": int(done.sum()),
        "complete": bool(store.complete),
        "columns": [c for c in ("labels", "qid", "row_ids") if getattr(store, c, None) is not None],
        "format": store.format,
        "package_version": store.package_version,
        "method": store.spec.get("method"),
        "params": store.spec.get("params"),
    }
    if verify:
        bad = store.verify_blocks()
        out["blocks_bad"] = {str(k): v for k, v in sorted(bad.items())}
    return out


def run(args):
    from ..pipeline import open_store
    from ._paths import existing, is_store

    path = existing(args.store, "store")
    if not is_store(path):
        raise UsageError(f"store {args.store}: not a dask_kernels feature store")
    s = summary(open_store(path), args.verify)
    ok = s["complete"] and s["blocks_done"] == s["blocks"] and not s.get("blocks_bad")
    if args.json:
        print(json.dumps(s, sort_keys=True))
        return 0 if ok else 1
    params = ", ".join(f"{k}={v!r}" for k, v in sorted((s["params"] or {}).items()) if k != "center" or v is None)
    print(f"store: {s['path']}")
    print(f"rows: {s['rows']} x {s['width']} {s['dtype']}")
    print(f"blocks: {s['blocks']} of {s['block_rows']} rows, {s['blocks_done']} done")
    print(f"columns: {', '.join(s['columns']) or 'none'}")
    print(f"spec: {s['method']}({params})")
    print(f"complete: {'yes' if s['complete'] else 'no (re-run the same featurize command to finish it)'}")
    if args.verify:
        bad = s["blocks_bad"]
        print(f"integrity: {s['blocks'] - len(bad)} of {s['blocks']} blocks verified"
              + (f"; bad: {'; '.join(f'block {k}: {v}' for k, v in bad.items())}" if bad else ""))
    else:
        print("integrity: not read (pass --verify to read and check every block)")
    return 0 if ok else 1
