"""``dask-kernels info PATH``: what a feature store or a saved model holds.

A store: its rows, blocks (per appended segment: their own block sizes), map spec and whether
it is whole. Reads the store's attributes and done records (cheap); ``--verify`` also reads
every block and checks it against its checksums and done record. Exit status 0 for a complete
store whose blocks are all done (and verified, with ``--verify``), 1 otherwise, so scripts can
test it.

A saved model (``dask-kernels train -o``): its map, estimator, classes, training history and the
library versions that wrote it; loading it checks every file, so exit status 0 means it loads.
"""

import json

from ._args import UsageError

help = "show a feature store's rows, blocks, map spec, completeness and integrity, or what a saved model holds"


def add_arguments(parser):
    parser.add_argument("store", metavar="PATH", help="feature store or saved model (path, file:// or fsspec URL)")
    parser.add_argument("--verify", action="store_true", help="read every block and check its checksums")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")


def _blocks(rows, blocks, block_rows):
    """``"3 blocks of 1000 rows (the last 500)"``: the rows each block really holds (a store's
    ``block_rows`` is at most that: one block of 500 rows is not "of 1500")."""
    if blocks <= 1:
        return f"{blocks} block{'' if blocks == 1 else 's'}" + (f" of {rows} rows" if blocks else "")
    last = rows - (blocks - 1) * block_rows
    return f"{blocks} blocks of {block_rows} rows" + (f" (the last {last})" if last != block_rows else "")


def _print_names(names):
    if names is not None:
        print("input columns: " + ", ".join(names[:20]) + (f", ... ({len(names)})" if len(names) > 20 else ""))


def _print_classes(classes):
    if classes is not None:
        shown = ", ".join(map(str, classes[:20])) + (", ..." if len(classes) > 20 else "")
        print(f"classes: {len(classes)} ({shown})")


#: what each scale rule does, for the "learned" line
SCALE_RULES = {"minmax": "each column's training range onto [-1, 1]",
               "maxabs": "each column divided by its largest training |x|",
               "standard": "each column centred on its training mean and divided by its standard deviation"}


def learned(spec):
    """What the map learned from the training rows, from its spec: the bandwidth of
    ``gamma="scale"`` and the scale rule (the one ``"auto"`` or ``"auto_standard"`` chose) (empty
    when neither)."""
    params, state = spec.get("params") or {}, spec.get("state") or {}
    out = {}
    if params.get("gamma") == "scale" and "gamma" in state:
        out["gamma"] = state["gamma"]
    if isinstance(state.get("scale"), dict):
        out["scale"] = state["scale"].get("rule")
    return out


def _print_learned(values):
    if values:
        print("learned from the rows: " + ", ".join(
            f"gamma={v:.6g}" if k == "gamma" else f"scale={v} ({SCALE_RULES.get(v, v)})" for k, v in values.items()))


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
        "classes": None if getattr(store, "classes", None) is None else store.classes.tolist(),  # label names
        "feature_names": store.feature_names,
        "format": store.format,
        "package_version": store.package_version,
        "method": store.spec.get("method"),
        "params": store.spec.get("params"),
        "learned": learned(store.spec),
        "segments": [{"rows": s.n_rows, "blocks": s.n_blocks, "block_rows": s.block_rows}
                     for s in [store] + list(store.segments)] if store.segments else [],
    }
    if store.segments:  # the first rows' own counts, not the joined ones
        out["segments"][0].update(rows=int(store.info["n_rows"]), blocks=store._own_blocks)
    if verify:
        bad = store.verify_blocks()
        out["blocks_bad"] = {str(k): v for k, v in sorted(bad.items())}
    return out


def model_summary(path):
    """The dict ``info`` prints for a saved model (loaded, so every file is checked)."""
    from ..learn import load_model

    model = load_model(path)
    fmap, est = model.feature_map, model.estimator
    classes = getattr(est, "classes_", None)
    return {
        "path": path,
        "kind": "model",
        "method": None if fmap is None else fmap.method,
        "params": None if fmap is None else fmap.spec()["params"],
        "learned": {} if fmap is None else learned(fmap.spec()),
        "n_features_in": None if fmap is None else int(fmap.n_features_in_),
        "feature_names": None if getattr(model, "feature_names_in_", None) is None else
        [str(c) for c in model.feature_names_in_],
        "svmlight_zero_based": getattr(model, "svmlight_zero_based_", None),
        "estimator": type(est).__name__,
        "estimator_params": {k: v for k, v in est.get_params(deep=False).items()
                             if isinstance(v, (str, int, float, bool, type(None)))},
        "classes": None if classes is None else [c.item() if hasattr(c, "item") else c for c in classes],
        "history": list(model.history or []),
        "versions": getattr(model, "versions_", None),
    }


def _print_model(s):
    params = ", ".join(f"{k}={v!r}" for k, v in sorted((s["params"] or {}).items()) if k != "center" or v is None)
    print(f"model: {s['path']}")
    print(f"map: {s['method']}({params}) on {s['n_features_in']} features" if s["method"] else "map: none (raw rows)")
    _print_learned(s["learned"])
    _print_names(s["feature_names"])
    if s["svmlight_zero_based"] is not None:
        base = "0 (--zero-based)" if s["svmlight_zero_based"] else "1 (as in LIBSVM files)"
        print(f"svmlight input: indices from {base}; predict and score read svmlight files so")
    est = ", ".join(f"{k}={v!r}" for k, v in sorted(s["estimator_params"].items()))
    print(f"estimator: {s['estimator']}({est})")
    _print_classes(s["classes"])
    print(f"history: {len(s['history'])} epochs")
    for record in s["history"]:
        print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()))
    if s["versions"]:
        print("written with: " + ", ".join(f"{k} {v}" for k, v in sorted(s["versions"].items())))


def run(args):
    from ._paths import existing, is_store

    path = existing(args.store, "path")
    if not is_store(path):
        from ..learn.persist import UnreadableModelFile, check_model_path

        try:
            is_model = check_model_path(path, overwrite=True) == "model"
        except UnreadableModelFile as e:
            raise UsageError(f"{args.store}: {e}") from None
        except (OSError, ValueError):
            is_model = False
        if not is_model:
            raise UsageError(f"{args.store}: neither a dask_kernels feature store nor a saved model")
        try:
            s = model_summary(path)
        except ValueError as e:
            raise UsageError(f"model {args.store}: {e}") from None
        if args.json:
            print(json.dumps(s, sort_keys=True, default=str))
        else:
            _print_model(s)
        return 0
    from ..pipeline import open_store  # here: a model's summary has no use for it

    s = summary(open_store(path), args.verify)
    ok = s["complete"] and s["blocks_done"] == s["blocks"] and not s.get("blocks_bad")
    if args.json:
        print(json.dumps(s, sort_keys=True))
        return 0 if ok else 1
    params = ", ".join(f"{k}={v!r}" for k, v in sorted((s["params"] or {}).items()) if k != "center" or v is None)
    print(f"store: {s['path']}")
    print(f"rows: {s['rows']} x {s['width']} {s['dtype']}")
    if s["segments"]:
        print(f"blocks: {s['blocks']}, {s['blocks_done']} done, in {len(s['segments'])} segments (appended):")
        for n, seg in enumerate(s["segments"]):
            print(f"  segment {n}: {seg['rows']} rows, {_blocks(seg['rows'], seg['blocks'], seg['block_rows'])}")
    else:
        print(f"blocks: {_blocks(s['rows'], s['blocks'], s['block_rows'])}, {s['blocks_done']} done")
    print(f"columns: {', '.join(s['columns']) or 'none'}")
    _print_names(s["feature_names"])
    _print_classes(s["classes"])
    print(f"spec: {s['method']}({params})")
    _print_learned(s["learned"])
    print(f"complete: {'yes' if s['complete'] else 'no (re-run the same featurize command to finish it)'}")
    if args.verify:
        bad = s["blocks_bad"]
        print(f"integrity: {s['blocks'] - len(bad)} of {s['blocks']} blocks verified"
              + (f"; bad: {'; '.join(f'block {k}: {v}' for k, v in bad.items())}" if bad else ""))
    else:
        print("integrity: not read (pass --verify to read and check every block)")
    return 0 if ok else 1
