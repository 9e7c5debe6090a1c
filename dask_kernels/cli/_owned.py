"""Outputs that name their writer, so a later run may replace what it wrote and nothing else.

``predict`` (predictions) and ``similar`` (pairs) write a small marker with every output:
inside a Zarr or Parquet output folder
(``_dask_kernels.json``: Parquet and Zarr readers skip names starting with ``_``), and beside a
``.npy`` or ``.csv`` file (``.NAME.npy.dask-kernels.json``, with the SHA-256 of the file, since
a single file has nowhere to keep it). The marker records who wrote the output: a job file (``dask-kernels
run``) or the command line. An existing output is replaced only when

* its marker is there and valid,
* it was written by the same command (a folder of predictions is not replaced by pairs, nor
  the other way round),
* the output holds nothing but what that command writes (a file a user put in the folder, or a
  ``.npy`` whose bytes changed since it was written, makes it the user's), and
* the writer matches: the same job file for a job's ``[[outputs]]``; any run of the command for
  ``--overwrite``.

Anything else is refused with a message naming the path, never deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ._args import UsageError
from ._paths import exists, is_url

MARKER = "_dask_kernels.json"
#: the marker's format by the command that writes the output
FORMATS = {"predict": "dask-kernels-prediction", "similar": "dask-kernels-pairs"}
VERSION = 1
MAX_MARKER_BYTES = 64 * 1024  # a marker is a few hundred bytes; a larger file is not ours

#: what ``predict`` writes inside an output folder, by kind (anything else is someone else's)
OWN_ENTRIES = {
    "zarr": re.compile(r"^(zarr\.json|c(/.*)?|" + re.escape(MARKER) + r")$"),
    "parquet": re.compile(r"^(part\.\d+\.parquet|_metadata|_common_metadata|" + re.escape(MARKER) + r")$"),
}


#: outputs that are one file (gathered by the client), their marker beside them
FILE_KINDS = ("npy", "csv")


def writer_of(job):
    """The writer recorded in a marker: ``job:<absolute job file path>`` or ``command line``."""
    return f"job:{os.path.abspath(job)}" if job else "command line"


def _npy_marker(path):
    folder, base = os.path.split(path)
    return os.path.join(folder, f".{base}.dask-kernels.json")


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fs(path):
    if is_url(path):
        from ..pipeline.location import filesystem

        return filesystem(path)
    import fsspec

    return fsspec.filesystem("file"), path


def write_marker(tmp, kind, writer, final, command="predict", digest=None):
    """Record ``writer`` for the output of ``command`` being written at ``tmp`` (published later
    at ``final``). A file's marker is beside ``final``: written before the rename (``tmp`` not
    ``final``) it also accepts the output it replaces (``next_sha256``: a kill between the rename
    and the marker written again after it, with ``tmp`` = ``final``, leaves an output the next run
    still recognises as its own). Returns a file's digest (``digest``: known already)."""
    record = {"format": FORMATS[command], "version": VERSION, "kind": kind, "writer": writer}
    if kind in FILE_KINDS:
        marker = _npy_marker(final)
        digest = digest or _sha256(tmp)
        previous = _read_marker(_fs(final)[0], marker, command) if tmp != final else None
        ours = previous is not None and previous["kind"] == kind and os.path.isfile(final) and not os.path.islink(final)
        in_place = _sha256(final) if ours else None  # still accepted only if the marker accepted it
        if in_place is not None and in_place in (previous.get("sha256"), previous.get("next_sha256")):
            record.update(sha256=in_place, next_sha256=digest)
        else:
            record["sha256"] = digest
        with open(marker + ".tmp", "w") as f:
            json.dump(record, f)
        os.replace(marker + ".tmp", marker)  # our own marker name only
        return digest
    fs, p = _fs(tmp)
    with fs.open(f"{p.rstrip('/')}/{MARKER}", "w") as f:
        json.dump(record, f)


def _read_marker(fs, path, command):
    try:
        if fs.size(path) > MAX_MARKER_BYTES:
            return None
        with fs.open(path, "rb") as f:
            record = json.loads(f.read(MAX_MARKER_BYTES + 1))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMATS[command] or record.get("version") != VERSION:
        return None
    if not isinstance(record.get("writer"), str) or record.get("kind") not in ("zarr", "parquet", *FILE_KINDS):
        return None
    return record


def why_not_ours(path, kind, writer=None, command="predict"):
    """None if ``path`` is an output of ``command`` that may be replaced (by ``writer``, or by
    any writer when None); otherwise the reason it is not, for the error message."""
    by = f"dask-kernels {command}"
    if kind in FILE_KINDS:
        if is_url(path) or not os.path.isfile(path) or os.path.islink(path):
            return f"it is not a .{kind} file written by {by}"
        fs, _ = _fs(path)
        record = _read_marker(fs, _npy_marker(path), command)
        if record is None or record["kind"] != kind:
            return f"it was not written by {by} (no marker beside it)"
        if _sha256(path) not in (record.get("sha256"), record.get("next_sha256")):
            return f"its bytes changed since {by} wrote it"
    else:
        fs, p = _fs(path)
        if not fs.isdir(p) or (not is_url(path) and os.path.islink(path)):
            return f"it is not a {kind} output folder written by {by}"
        record = _read_marker(fs, f"{p.rstrip('/')}/{MARKER}", command)
        if record is None or record["kind"] != kind:
            return f"it was not written by {by} (no marker in it)"
        root = p.rstrip("/") + "/"
        for entry in fs.find(p, withdirs=False):
            name = entry[len(root):] if entry.startswith(root) else entry
            if not OWN_ENTRIES[kind].match(name):
                return f"it holds {name!r}, which {by} did not write"
    if writer is not None and record["writer"] != writer:
        return f"it was written by {record['writer']}, not by {writer}"
    return None


def check_replaceable(path, kind, writer=None, command="predict"):
    """UsageError unless the existing output at ``path`` may be replaced by ``writer``."""
    reason = why_not_ours(path, kind, writer, command)
    if reason is not None:
        raise UsageError(f"-o {path}: already exists and {reason}; refusing to replace it "
                         "(choose another name or move it away)")


def remove_own(path, kind):
    """Delete an output that :func:`why_not_ours` accepted (and the marker beside a .npy)."""
    if kind in FILE_KINDS:
        os.unlink(path)
        marker = _npy_marker(path)
        if os.path.lexists(marker):
            os.unlink(marker)
        return
    fs, p = _fs(path)
    fs.rm(p, recursive=True)


# -- writing an output under a temporary name, published by one rename ----------------------------
def clear_in_place(path, kind, replace_for, command="predict"):
    """Before an output is written in place (``path`` a URL: object stores have no rename, see
    :func:`temporary_path`), remove the previous output there if it may be replaced
    (``replace_for`` not False; checked ours now); a local output stays until :func:`publish`."""
    if is_url(path) and replace_for is not False and exists(path):
        check_replaceable(path, kind, replace_for, command)
        remove_own(path, kind)


def temporary_path(path):
    """Where an output for ``path`` is written before :func:`publish` renames it into place: a
    hidden sibling of a name of our own, so a failed command leaves no partial output at ``path``
    (``path`` itself for URLs: object stores have no rename; checked absent beforehand)."""
    if is_url(path):
        return path
    folder, base = os.path.split(path)
    return os.path.join(folder, f".{base}.dk-tmp-{uuid.uuid4().hex[:8]}")


class OutputAppeared(UsageError):
    """Something appeared at the output's name while the command ran: it was not replaced, and
    the message says where the results (and a previous output moved aside) were left."""


def _move_to_free_name(src, dst):
    """Rename ``src`` to ``dst`` only if nothing is there; False (``src`` left as it is) if
    something is: never replaces anything."""
    if os.path.isdir(src):
        if os.path.lexists(dst):
            return False
        os.rename(src, dst)
        return True
    try:
        os.link(src, dst)  # fails if dst exists
    except FileExistsError:
        return False
    os.unlink(src)
    return True


def publish(tmp, path, kind, replace_for, command="predict"):
    """Rename ``tmp`` to ``path``. An output that was there is replaced only if it still passes
    :func:`check_replaceable` for ``command`` (``replace_for`` not False; moved aside, then
    deleted once the new one is in place); nothing else that appeared there meanwhile is
    replaced: :class:`OutputAppeared`, the results kept at ``tmp`` (callers keep it)."""
    if tmp == path:
        return
    if replace_for is not False and os.path.lexists(path):
        check_replaceable(path, kind, replace_for, command)
        folder, base = os.path.split(path)
        old = os.path.join(folder, f".{base}.dk-old-{uuid.uuid4().hex[:8]}")
        os.rename(path, old)
        try:
            publish(tmp, path, kind, False)
        except BaseException:
            if not _move_to_free_name(old, path):  # the previous output back, unless its name was taken
                raise OutputAppeared(f"-o {path}: appeared while the command ran; results left at {tmp}, "
                                     f"the previous output at {old}") from None
            raise
        remove_temporary(old, path)
        return
    if not _move_to_free_name(tmp, path):
        raise OutputAppeared(f"-o {path}: appeared while the command ran; results left at {tmp}")


@contextmanager
def written_aside(path, kind, replace_for, command="predict") -> Iterator[str]:
    """``with written_aside(path, ...) as tmp:`` the block writes the output at ``tmp`` (a
    temporary name, :func:`temporary_path`; a URL's previous output is cleared first,
    :func:`clear_in_place`) and ends with :func:`publish`. If the block fails, what it wrote at
    ``tmp`` is removed, unless :func:`publish` kept it there for the user (:class:`OutputAppeared`)."""
    clear_in_place(path, kind, replace_for, command)
    remove_stale_temporaries(path, kind)
    tmp = temporary_path(path)
    try:
        yield tmp
    except OutputAppeared:  # the results stay where the message says
        raise
    except BaseException:
        remove_temporary(tmp, path)
        raise


#: a temporary output untouched this long (s) was left by a killed command, not one still writing
STALE_SECONDS = 600


def _newest_change(path):
    """The latest modification time of ``path`` and of everything in it (a Zarr output's chunks
    are written in subfolders, which leaves the top folder's own time as it was)."""
    newest = os.lstat(path).st_mtime
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
    return newest


def remove_stale_temporaries(path, kind):
    """Delete what killed runs writing the local output ``path`` left beside it: unfinished
    temporaries (:func:`temporary_path`) of ours, untouched for STALE_SECONDS: a file still under
    its writer's name (``.NAME.dk-tmp-<tag>.npy``, not yet renamed), or a folder holding only what
    the command writes and no marker (written once the results are complete). Finished results
    that a failed publish left for the user are kept."""
    if is_url(path):
        return
    import shutil
    import time

    folder, base = os.path.split(path)
    suffix = r"\.(npy|csv)" if kind in FILE_KINDS else ""  # a file's: its name while being written
    pattern = re.compile(re.escape(f".{base}.dk-tmp-") + r"[0-9a-f]{8}" + suffix + "$")
    for name in os.listdir(folder or "."):
        p = os.path.join(folder, name)
        if not pattern.match(name) or os.path.islink(p):
            continue
        try:
            if time.time() - _newest_change(p) < STALE_SECONDS:
                continue
            if kind in FILE_KINDS:
                if os.path.isfile(p):
                    os.unlink(p)
                continue
            entries = [os.path.relpath(os.path.join(d, f), p) for d, _, fs in os.walk(p) for f in fs]
            if os.path.isdir(p) and MARKER not in entries and all(OWN_ENTRIES[kind].match(e) for e in entries):
                shutil.rmtree(p)
        except OSError:  # removed meanwhile, or not ours to remove: left as it is
            continue


def remove_temporary(tmp, path):
    """Remove what was written under the temporary name ``tmp`` (never ``path`` itself)."""
    import shutil

    if tmp != path and os.path.lexists(tmp):  # our temporary name only
        shutil.rmtree(tmp) if os.path.isdir(tmp) else os.unlink(tmp)
    for suffix in (".npy", ".csv"):
        if tmp != path and os.path.lexists(tmp + suffix):
            os.unlink(tmp + suffix)
