"""``dask-kernels run job.toml``: a whole batch job from one file (a cron entry is one line).

The job file names the input, the map, the store, and optionally training and prediction
outputs; each step is the matching subcommand (``featurize``, then ``train`` from the store,
then ``predict`` per output), with the same checks, so a job file and a command line behave
alike. Relative paths are relative to the job file's folder. The whole file is checked (unknown
keys, types, values: messages name the key) before a cluster starts, and so are the outputs of
its steps (their formats, what is already at their paths, two of them at one path). Re-running a job resumes
an unfinished store. A job's ``[[outputs]]`` replace the predictions the same job file wrote on
an earlier run (each output records its writer; a file of anyone else's is refused, never
replaced); a saved model is replaced only with ``overwrite = true`` under ``[training]``. Local
folders of the outputs are created when missing (``--dry-run`` creates nothing).

Example::

    [cluster]                      # optional; --scheduler/--scheduler-file/--workers override it
    scheduler_file = "/shared/scheduler.json"

    [input]
    path = "data/train.npy"
    labels = "data/train_labels.npy"
    # or Parquet/CSV rows: path = "s3://bucket/train/" (a folder of .parquet files) and
    # label_column = "y" (columns = ["a", "b"] picks the features; default every other number)

    [map]
    method = "gcws"
    params = { n_components = 256, bits = 8 }

    [store]
    path = "features/train.zarr"   # or s3://bucket/features/train.zarr
    block_rows = 5000

    [training]                     # optional
    output = "models/train.dk"
    epochs = 5

    [[outputs]]                    # optional: predictions of the trained model
    input = "data/new.npy"
    path = "predictions/new.zarr"
"""

import json
import os
import re
import shlex
import sys
import tomllib
import warnings

from .._files import MAX_JSON_BYTES, file_problem
from ._args import UsageError
from ._cluster import add_cluster_arguments

help = "run a batch job described by a TOML job file: featurize, then optionally train and predict"

# key -> (flag, kind); kind: "path", "str", "int", "num", "bool", "flag-if-false" (True = default),
# "names" (a list of column names, or one comma-separated string)
CLUSTER = {"scheduler": ("--scheduler", "str"), "scheduler_file": ("--scheduler-file", "path"),
           "scheduler_file_timeout": ("--scheduler-file-timeout", "num"), "workers": ("--workers", "int"),
           "threads_per_worker": ("--threads-per-worker", "int")}
TABLE = {"columns": ("--columns", "names"), "label_column": ("--label-column", "str"), "header": ("--header", "bool")}
INPUT = {"path": (None, "path"), "format": ("--format", "str"), "labels": ("--labels", "path"),
         "n_features": ("--n-features", "int"), "zero_based": ("--zero-based", "bool"),
         "blocksize": ("--blocksize", "int"), **TABLE}
MAP = {"method": ("--method", "str"), "params": ("--param", "table"), "spec": ("--spec", "path")}
STORE = {"path": (None, "path"), "block_rows": ("--block-rows", "int"), "overwrite": ("--overwrite", "bool"),
         "append": ("--append", "bool"), "progress": ("--no-progress", "flag-if-false"),
         "chunks": ("--block-rows", "int")}  # deprecated name of block_rows (FutureWarning)
TRAINING = {"output": ("-o", "path"), "overwrite": ("--overwrite", "bool"), "estimator": ("--estimator", "str"),
            "epochs": ("--epochs", "int"), "alpha": ("--alpha", "num"), "eta0": ("--eta0", "num"),
            "validation": ("--validation-fraction", "num"), "patience": ("--n-iter-no-change", "int"),
            "block_rows": ("--block-rows", "int"), "step_blocks": ("--step-blocks", "int"), "seed": ("--seed", "int"),
            "checkpoint": ("--checkpoint", "path"),
            "checkpoint_every": ("--checkpoint-every", "int"), "resume": ("--no-resume", "flag-if-false"),
            "metric": ("--metric", "str"), "min_epochs": ("--min-epochs", "int"), "loss": ("--loss", "str"),
            "checkpoint_interval": ("--checkpoint-interval", "num"), "progress": ("--no-progress", "flag-if-false")}
OUTPUT = {"input": (None, "path"), "path": ("-o", "path"), "model": (None, "path"), "proba": ("--proba", "bool"),
          "format": ("--format", "str"), "n_features": ("--n-features", "int"), "zero_based": ("--zero-based", "bool"),
          "blocksize": ("--blocksize", "int"), **TABLE}
SECTIONS = {"cluster": CLUSTER, "input": INPUT, "map": MAP, "store": STORE, "training": TRAINING, "outputs": OUTPUT}


def add_arguments(parser):
    parser.add_argument("job", help="TOML job file (its sections and keys: docs/guide/batch.md)")
    add_cluster_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="check the job file and print the steps' command lines")


class JobError(UsageError):
    pass


def _not_json(value):
    """The first item of ``value`` (TOML, so at most a few hundred levels deep) that JSON cannot hold,
    else None."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
        elif not isinstance(v, (str, int, float)):  # bool is an int: true and false pass
            return v
    return None


def _check(where, table, keys, base):
    """``[(key, flag, value-as-text-or-bool)]`` of a table, every key and type checked."""
    if not isinstance(table, dict):
        raise JobError(f"{where}: expected a table, got {type(table).__name__}")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise JobError(f"{where} {unknown[0]}: unknown key; known: {', '.join(sorted(keys))}")
    out = []
    for key, value in table.items():
        flag, kind = keys[key]
        name = f"{where} {key}"
        if kind in ("bool", "flag-if-false"):
            if not isinstance(value, bool):
                raise JobError(f"{name}: expected true or false, got {value!r}")
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise JobError(f"{name}: expected an integer, got {value!r}")
        elif kind == "num":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise JobError(f"{name}: expected a number, got {value!r}")
        elif kind == "table":
            if not isinstance(value, dict):
                raise JobError(f"{name}: expected a table like {{ n_components = 256 }}, got {value!r}")
            for k, v in value.items():  # passed on as --param k=<JSON>: TOML dates and times have no JSON form
                bad = _not_json(v)
                if bad is not None:
                    raise JobError(f"{name} {k}: a TOML {type(bad).__name__} ({bad}) is not a parameter value; give "
                                   "a number, a string, true/false or an array of those")
        elif kind == "names":
            names = value.split(",") if isinstance(value, str) else value
            if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() and "," not in n
                                                                    for n in names):
                raise JobError(f"{name}: expected a list of column names like [\"a\", \"b\"], got {value!r}")
            value = ",".join(n.strip() for n in names)
        elif not isinstance(value, str) or not value:
            raise JobError(f"{name}: expected a non-empty string, got {value!r}")
        if kind == "path" and "://" not in value:
            value = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
        out.append((key, flag, value))
    return out


def _argv(items, names, section):
    """Command-line arguments of checked items; ``names`` maps each flag to its key's name."""
    argv = []
    for key, flag, value in items:
        kind = None
        if flag is None:
            continue
        if flag == "--header" and value is False:  # header = false: the file has none
            argv.append("--no-header")
        elif isinstance(value, bool):
            kind = "flag-if-false" if flag.startswith("--no-") else "bool"
            if (kind == "bool" and value) or (kind == "flag-if-false" and not value):
                argv.append(flag)
        elif isinstance(value, dict):
            for k, v in value.items():
                argv += [flag, f"{k}={json.dumps(v)}"]
        else:
            argv += [flag, str(value)]
        names[flag] = f"{section} {key}"
    return argv


def load_job(path):
    """``{section: checked items}`` of a job file, or JobError naming the file and key."""
    try:
        problem = file_problem(path, MAX_JSON_BYTES)  # a FIFO would block the read, a device never end it
        if problem is not None and not os.path.isdir(path):  # a folder: open says so
            raise JobError(f"job {path} {problem}; give a TOML job file")
        with open(path, "rb") as f:
            job = tomllib.load(f)
    except FileNotFoundError:
        raise JobError(f"job {path}: no such file") from None
    except OSError as e:  # a folder, no permission: the OS's message names no job
        raise JobError(f"job {path}: not readable ({e.strerror or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise JobError(f"job {path}: not valid TOML ({e})") from None
    except UnicodeDecodeError as e:  # TOML is UTF-8; tomllib decodes before parsing, naming no line
        line = e.object[:e.start].count(b"\n") + 1  # e.object: the whole file, as read
        raise JobError(f"job {path}: not valid TOML: line {line} holds byte {e.object[e.start:e.start + 1]!r}, "
                       "not UTF-8 text (a TOML file is UTF-8; save the file as UTF-8)") from None
    except RecursionError:  # tomllib parses nested arrays recursively: [[[[... thousands deep
        raise JobError(f"job {path}: not valid TOML (arrays or tables nested too deep to parse)") from None
    base = os.path.dirname(os.path.abspath(path))
    unknown = sorted(set(job) - set(SECTIONS))
    if unknown:
        raise JobError(f"job {path}: [{unknown[0]}]: unknown section; known: {', '.join(SECTIONS)}")
    for required in ("input", "map", "store"):
        if required not in job:
            raise JobError(f"job {path}: [{required}] is missing")
    store = job.get("store")
    if isinstance(store, dict) and "chunks" in store:
        if "block_rows" in store:
            raise JobError("[store] chunks: the deprecated name of block_rows; give block_rows only")
        warnings.warn(f"job {path}: [store] chunks is deprecated and will be removed in the next release: "
                      "use block_rows", FutureWarning, stacklevel=2)
    checked = {}
    for section in ("cluster", "input", "map", "store", "training"):
        if section in job:
            checked[section] = dict((k, (f, v))
                                    for k, f, v in _check(f"[{section}]", job[section], SECTIONS[section], base))
    outputs = job.get("outputs", [])
    if not isinstance(outputs, list):
        raise JobError("[[outputs]]: expected an array of tables ([[outputs]] ... )")
    checked["outputs"] = [dict((k, (f, v)) for k, f, v in _check(f"[[outputs]] #{i + 1}", o, OUTPUT, base))
                          for i, o in enumerate(outputs)]
    for key in ("path",):
        for section in ("input", "store"):
            if key not in checked[section]:
                raise JobError(f"[{section}] {key}: missing")
    if "method" not in checked["map"] and "spec" not in checked["map"]:
        raise JobError("[map]: needs method (with params) or spec")
    if "training" in checked and "output" not in checked["training"]:
        raise JobError("[training] output: missing (where to save the model)")
    for i, o in enumerate(checked["outputs"]):
        for key in ("input", "path"):
            if key not in o:
                raise JobError(f"[[outputs]] #{i + 1} {key}: missing")
        if "model" not in o and "training" not in checked:
            raise JobError(f"[[outputs]] #{i + 1} model: missing (no [training] in this job to take it from)")
        why_not = _no_proba(checked) if "model" not in o and o.get("proba", (None, False))[1] else None
        if why_not:
            raise JobError(f"[[outputs]] #{i + 1} proba: the model [training] trains gives no probabilities "
                           + why_not)
    _refuse_shared_paths(checked)
    return checked


def _within(path, other):
    """Whether ``path`` is ``other`` or inside it (paths normalized by :func:`_check`; URLs as text)."""
    return path == other or path.startswith(other.rstrip("/") + "/")


def _refuse_shared_paths(checked):
    """Refuse a path the job writes (its store, model, checkpoint, outputs) that is another path
    of the job or inside one (or holds one): two ``[[outputs]]`` at one path silently kept only
    the last; a model or output at the store's or the input's path was refused only once the
    steps before it had run."""
    def get(section, *keys):
        table = checked.get(section, {})
        return [(f"[{section}] {k}", table[k][1]) for k in keys if k in table]

    writes = get("store", "path") + get("training", "output", "checkpoint")
    own = [p for _, p in writes[:2]]  # the store and the model: the outputs may read them
    reads = get("input", "path", "labels")
    for i, o in enumerate(checked["outputs"]):
        where = f"[[outputs]] #{i + 1}"
        writes.append((f"{where} path", o["path"][1]))
        reads += [(f"{where} {k}", o[k][1]) for k in ("input", "model")
                  if k in o and not any(_within(o[k][1], p) for p in own)]
    for i, (name, path) in enumerate(writes):
        for other, q in writes[:i] + reads:
            if _within(path, q) or _within(q, path):
                how = "is also" if path == q else "is inside" if _within(path, q) else "holds"
                raise JobError(f"{name}: {path} {how} {other}; give each output a path of its own")


def _no_proba(checked):
    """Why the model the job's [training] trains gives no probabilities, with the advice that
    fits, or None if it gives them. A regressor (``estimator = "sgd-regressor"``) predicts values,
    not classes; a hinge SGD (``estimator = "sgd-hinge"``, or ``loss = "hinge"`` of SoftmaxSGD)
    or a perceptron is a classifier without probabilities."""
    t = {k: v for k, (_f, v) in checked["training"].items()}
    if t.get("estimator") == "sgd-regressor":
        return "(a regressor predicts values, not class probabilities); drop proba"
    if t.get("estimator") in ("sgd-hinge", "perceptron") or t.get("loss") == "hinge":
        return ("(a hinge loss or a perceptron); train with the default loss (drop loss = \"hinge\") or "
                "estimator = \"sgd\", or drop proba")
    return None


def _items(table):
    return [(k, f, v) for k, (f, v) in table.items()]


def steps(job, cluster_argv, job_path=None):
    """``[(section name, argv, {flag: key})]``: the subcommands the job runs, in order."""
    out = []
    names = {}
    inp, store = job["input"], job["store"]
    cluster = cluster_argv if cluster_argv is not None else _argv(_items(job.get("cluster", {})), names, "[cluster]")
    argv = ["featurize", inp["path"][1], store["path"][1]]
    argv += (_argv(_items(inp), names, "[input]") + _argv(_items(job["map"]), names, "[map]")
             + _argv(_items(store), names, "[store]") + cluster)
    out.append(("[input]/[map]/[store]", argv, names))
    if "training" in job:
        names = {}
        t = job["training"]
        argv = ["train", store["path"][1]] + _argv(_items(t), names, "[training]") + cluster
        out.append(("[training]", argv, names))
    for i, o in enumerate(job["outputs"]):
        names = {}
        model = o["model"][1] if "model" in o else job["training"]["output"][1]
        argv = ["predict", model, o["input"][1]] + _argv(_items(o), names, f"[[outputs]] #{i + 1}") + cluster
        if job_path is not None:  # the job's own outputs of an earlier run are replaced, nothing else
            argv += ["--job", job_path]
        out.append((f"[[outputs]] #{i + 1}", argv, names))
    return out


def _rename(message, names):
    """A step's message with the CLI's flags replaced by the job file's keys."""
    for flag, key in sorted(names.items(), key=lambda kv: -len(kv[0])):  # --no-progress before --no
        message = message.replace(f"argument {flag}", key)
        message = message.replace(f"{flag} ", f"{key} ").replace(f"{flag}:", f"{key}:")
    return message


def _parse(argv, where, names, build_parser):
    """Parse a step with the CLI's own parser (``build_parser()``); argparse errors name the job
    file's keys."""
    parser = build_parser()
    sub = next(a for a in parser._subparsers._group_actions).choices[argv[0]]

    def error(message):
        raise JobError(_rename(message, names))

    sub.error = parser.error = error
    return parser.parse_args(argv)


def cluster_override(args):
    """Cluster flags given to ``run`` itself (they replace the job file's [cluster]), or None."""
    argv = []
    if args.scheduler:
        argv += ["--scheduler", args.scheduler]
    if args.scheduler_file:
        argv += ["--scheduler-file", args.scheduler_file,
                 "--scheduler-file-timeout", str(args.scheduler_file_timeout)]
    if args.workers:
        argv += ["--workers", str(args.workers), "--threads-per-worker", str(args.threads_per_worker)]
    return argv or None


#: A step's flags as the job file's keys, in a step's error: a job is fixed in its file
_JOB_KEYS = {"featurize": {"--overwrite": "overwrite = true under [store]", "--append": "append = true under [store]"},
             "train": {"--overwrite": "overwrite = true under [training]"}}


def _job_advice(message, command):
    """A ``command`` step's error with the flags it advises (``pass --overwrite``) said as the
    job file's keys (``set overwrite = true under [store]``)."""
    for flag, key in _JOB_KEYS.get(command, {}).items():
        message = re.sub(rf"\b([Pp])ass {flag}\b", lambda m: ("S" if m.group(1) == "P" else "s") + f"et {key}",
                         message)
        message = re.sub(rf"(?<![\w-]){flag}\b", key, message)
    return message


def run(args):
    from ..learn.checkpointer import CheckpointMismatch
    from ._args import USER_ERRORS, debug_on, input_where, output_where, user_message
    from ._owned import writer_of
    from ._paths import normalize
    from .featurize import build_map
    from .predict import output_kind
    from .train import check_args as train_checks

    job = load_job(args.job)
    plan = [(where, _parse(argv, where, names, args._build_parser), argv, names)
            for where, argv, names in steps(job, cluster_override(args), os.path.abspath(args.job))]
    folders = []  # local folders of the outputs that do not exist yet: created when the job runs
    for where, parsed, argv, names in plan:  # the map and the outputs too, before a cluster starts
        out = getattr(parsed, "output", None)
        folder_made = True
        if parsed.command in ("train", "predict") and out and "://" not in out:
            folder = os.path.dirname(os.path.abspath(out))
            if not os.path.isdir(folder):
                if os.path.lexists(folder):
                    raise JobError(f"{where}: output {out}: {folder} exists and is not a folder")
                folders.append(folder)
                folder_made = False
        if parsed.command == "featurize":
            try:
                build_map(parsed)
            except UsageError as e:
                raise JobError(_rename(str(e), names)) from None
            continue
        try:
            if parsed.command == "train":  # a model there without overwrite: refused now, not after featurizing
                train_checks(parsed, folder_made)
            else:  # an unknown output format, or an output of someone else's: likewise
                output_kind(normalize(out), writer_of(parsed.job), folder_made)
        except USER_ERRORS as e:
            if debug_on(args):
                raise
            raise JobError(f"{where}: {_rename(_job_advice(user_message(e), parsed.command), names)}") from None
    for folder in dict.fromkeys(folders):
        print(f"== {'would create' if args.dry_run else 'creating'} folder {folder}", flush=True)
        if not args.dry_run:
            os.makedirs(folder, exist_ok=True)
    for where, parsed, argv, _ in plan:
        # quoted: a path with spaces pastes back as one argument
        print(f"== {where}: dask-kernels {shlex.join(argv)}", flush=True)
        if args.dry_run:
            continue
        try:
            try:
                rc = parsed._run(parsed)
            except CheckpointMismatch:
                # a job's checkpoint is for resuming the same night's training: one of other rows or
                # parameters is an earlier night's (the store grew, the job file changed)
                print(f"== {where}: checkpoint {parsed.checkpoint} is of another training (an earlier night's rows "
                      "or parameters); starting over", flush=True)
                parsed.no_resume = True
                rc = parsed._run(parsed)
        except USER_ERRORS as e:
            if debug_on(args):
                raise
            advice = _job_advice(input_where(parsed, e) + output_where(parsed, e) + user_message(e), parsed.command)
            raise JobError(f"{where}: {advice}") from None
        sys.stdout.flush()
        if rc:
            return rc
    return 0
