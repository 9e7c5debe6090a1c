"""Atomic, pickle-free, bounded ``.npz`` files: checkpoints, saved models' arrays, sidecars.

A file is an ``.npz`` (zip) archive: one ``.npy`` member per array and, in checkpoints and
models, ``__meta__.npy``, a JSON text that also lists every array's shape and dtype
(``meta["arrays"]``). A feature map's sidecar (:mod:`dask_kernels.sidecar`) has no metadata
member: its manifest is in the map's spec and is given to :func:`read_arrays`. Writing goes to
a temporary name in the same folder, is flushed to disk, then renamed over the target; on any
failure the temporary file is removed.

Reading trusts nothing in the file. It opens the zip itself (never ``np.load``), reads only
``__meta__`` and the members the manifest declares, and for each member checks the zip header's
size and the ``.npy`` header's shape and dtype against the manifest *before* allocating. The
bytes it may allocate are capped: at most ``MAX_RATIO`` times the file's size on disk plus
``MIN_BUDGET`` (and ``max_bytes`` if given), so a small file whose members inflate to gigabytes
(a "zip bomb") is refused after reading a few headers. Every error is a ``ValueError`` that
names the file and the member.
"""

import json
import math
import os
import uuid
import zipfile
import zlib

import numpy as np

from ._files import file_problem

_META = "__meta__"
#: Bytes loading may allocate per byte of the file on disk (np.savez stores, ratio ~1).
MAX_RATIO = 16
#: Bytes loading may allocate whatever the file size (small files, JSON metadata).
MIN_BUDGET = 2**20
_CHUNK = 2**20
_ALLOWED_KINDS = "biufU"  # numbers, booleans and fixed-width strings: nothing that unpickles
# what zipfile raises for damaged members (NotImplementedError: an unknown compression method,
# RuntimeError: the encryption flag, zlib.error and EOFError: a broken deflate stream)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


def manifest(arrays):
    """``{name: {"shape": [...], "dtype": str}}`` of ``arrays`` (what a reader checks against)."""
    return {k: {"shape": [int(n) for n in np.shape(v)], "dtype": np.asarray(v).dtype.str}
            for k, v in arrays.items()}


def save_npz(path, arrays, meta=None):
    """Write ``arrays`` and the JSON ``meta`` to ``path`` atomically (temp file, fsync, rename).

    A reader sees either the previous file or the complete new one, never a partial write, and
    a failed write leaves no temporary file behind. ``meta["arrays"]`` is set to the manifest;
    ``meta`` None writes the arrays alone (a sidecar: its manifest is kept elsewhere).
    """
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    payload = {k: np.asarray(v) for k, v in arrays.items()}
    if meta is not None:
        meta = dict(meta, arrays=manifest(payload))
        payload[_META] = np.array(json.dumps(meta))
    fd, tmp = _new_temp(folder, base)
    try:
        with os.fdopen(fd, "wb") as f:
            # np.savez's format, written here so that the archive is closed on an error too: NumPy
            # 2.0's savez leaves it open, and its finalizer then fails on the closed file (a second
            # message after a full disk's)
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for name, a in payload.items():
                    with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, a, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _remove_stale_temps(folder, base)


def _new_temp(folder, base):
    """``(fd, path)`` of a new file ``.<base>.tmp-<pid>-<random>`` in ``folder``, open for writing.
    Created with the mode of any new file (0o666 less the umask), not mkstemp's 0o600: a saved
    model's arrays are as readable as its model.json and the files beside it."""
    while True:
        tmp = os.path.join(folder, f".{base}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:  # pragma: no cover - a 48-bit random name taken
            continue


def _remove_stale_temps(folder, base):
    """Remove temporary files of ``base`` left by processes that no longer exist (killed
    mid-write): only names this module makes, ``.<base>.tmp-<pid>-<random>``."""
    prefix = f".{base}.tmp-"
    for name in os.listdir(folder):
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            try:
                os.unlink(os.path.join(folder, name))
            except FileNotFoundError:
                pass
        except OSError:  # alive under another user: not ours to touch
            pass


def _budget(path, max_bytes):
    problem = file_problem(path, 2**63)  # a FIFO would block the zip reader, a device never end
    if problem is not None:
        raise ValueError(f"{path} {problem}; refusing to read it")
    budget = MIN_BUDGET + MAX_RATIO * os.path.getsize(path)
    return budget if max_bytes is None else min(budget, int(max_bytes))


def _bad(path, member, what):
    where = f"{path}" if member is None else f"{path}, member {member!r}"
    return ValueError(f"{where}: {what}")


def _read_member(zf, path, name, declared, budget):
    """The array of member ``name``.npy, checked against ``declared`` (or None) and ``budget``.

    Returns ``(array, nbytes)``.
    """
    member = f"{name}.npy"
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise _bad(path, member, "missing (the file is truncated or was edited)") from None
    try:
        return _read_array(zf, info, path, member, declared, budget)
    except _ZIP_ERRORS as e:  # a damaged local header, CRC, compression method or stream
        raise _bad(path, member, f"damaged ({type(e).__name__}: {e})") from None


def _read_array(zf, info, path, member, declared, budget):
    with zf.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"unsupported .npy version {version}")
        except ValueError as e:
            raise _bad(path, member, f"bad .npy header ({e})") from None
        if dtype.hasobject or dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None:
            raise _bad(path, member, f"dtype {dtype} is not a plain number or string dtype")
        if declared is not None:
            want = (tuple(declared["shape"]), np.dtype(declared["dtype"]))
            if (tuple(shape), dtype) != want:
                raise _bad(path, member, f"holds shape {tuple(shape)} {dtype.str}, the metadata "
                                         f"declares {want[0]} {want[1].str}")
        nbytes = math.prod(shape) * dtype.itemsize
        header = f.tell()
        if info.file_size != header + nbytes:
            raise _bad(path, member, f"has {info.file_size - header} data bytes, its header says {nbytes}")
        if nbytes > budget:
            raise _bad(path, member, f"would need {nbytes:,} bytes, more than this file may allocate "
                                     f"({budget:,} bytes: {MAX_RATIO}x its size on disk + "
                                     f"{MIN_BUDGET:,}); refusing to load it")
        out = np.empty(math.prod(shape), dtype=dtype)
        buf = memoryview(out.view(np.uint8)) if nbytes else None
        pos = 0
        while pos < nbytes:
            chunk = f.read(min(_CHUNK, nbytes - pos))
            if not chunk:
                raise _bad(path, member, f"truncated: {pos} of {nbytes} data bytes")
            buf[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
        f.read(1)  # reach the member's end: the zip layer checks its CRC there
    return out.reshape(shape, order="F" if fortran else "C"), nbytes


def _check_manifest(path, declared, budget):
    """Raise unless ``declared`` is a well-formed manifest whose arrays fit in ``budget``."""
    if not isinstance(declared, dict):
        raise _bad(path, _META, "'arrays' must map names to shapes and dtypes")
    sizes = {}
    for name, d in declared.items():
        try:
            shape, dtype = d["shape"], np.dtype(d["dtype"])
            if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool)
                                                    and 0 <= n < 2**63 for n in shape)):
                raise ValueError(f"bad shape {shape!r}")
        except (KeyError, TypeError, ValueError) as e:
            raise _bad(path, _META, f"arrays[{name!r}] is malformed ({e})") from None
        if not isinstance(name, str) or not name or name == _META:
            raise _bad(path, _META, f"bad array name {name!r}")
        sizes[name] = math.prod(shape) * dtype.itemsize
    if sum(sizes.values()) > budget:
        big = max(sizes, key=sizes.get)
        raise _bad(path, f"{big}.npy", f"declared as {sizes[big]:,} bytes (all arrays: {sum(sizes.values()):,}), "
                                       f"more than this file may allocate ({budget:,} bytes: {MAX_RATIO}x its "
                                       "size on disk); refusing to load it")


def load_npz(path, max_bytes=None):
    """``(arrays, meta)`` from :func:`save_npz`, bounded and never unpickling.

    Parameters
    ----------
    path : str or path-like
    max_bytes : int, optional
        Lower cap on the bytes loading may allocate (the default cap is ``MAX_RATIO`` times the
        file size plus ``MIN_BUDGET``).

    Raises
    ------
    ValueError
        Naming the file and member: not a zip archive, missing metadata or member, a member
        whose shape, dtype or size differs from what the metadata declares, or that would
        need more memory than the cap.
    """
    path = os.fspath(path)
    budget = _budget(path, max_bytes)
    with _open(path) as zf:
        if f"{_META}.npy" not in zf.NameToInfo:
            raise _bad(path, None, "not a dask_kernels file (no metadata member __meta__.npy)")
        text, used = _read_member(zf, path, _META, None, budget)
        if text.dtype.kind != "U" or text.shape != ():
            raise _bad(path, _META, f"must be a string, got {text.dtype} {text.shape}")
        try:
            meta = json.loads(str(text[()]))
        except (ValueError, RecursionError) as e:
            raise _bad(path, _META, f"is not valid JSON ({e})") from None
        if not isinstance(meta, dict):
            raise _bad(path, _META, "must be a JSON object")
        declared = meta.get("arrays")
        if declared is None:  # written before manifests: the members are what there is
            names = [n[:-4] for n in zf.namelist() if n.endswith(".npy") and n != f"{_META}.npy"]
            declared = {n: None for n in names}
        else:
            _check_manifest(path, declared, budget - used)
        return _read_members(zf, path, declared, budget - used), meta


def _read_members(zf, path, declared, budget):
    arrays = {}
    for name, d in declared.items():
        arrays[name], n = _read_member(zf, path, name, d, budget)
        budget -= n
    return arrays


def _open(path):
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as e:
        raise _bad(path, None, f"not a dask_kernels file (not a zip archive: {e})") from None


def read_arrays(path, declared, max_bytes=None):
    """The arrays of a file written by :func:`save_npz` without metadata (a sidecar), whose
    manifest ``declared`` (``{name: {"shape": [...], "dtype": str}}``) comes from elsewhere:
    the file must hold exactly those members, each checked as :func:`load_npz` checks them,
    with the same bound on what it allocates. Raises ``ValueError`` naming the file and member.
    """
    path = os.fspath(path)
    budget = _budget(path, max_bytes)
    _check_manifest(path, declared, budget)
    with _open(path) as zf:
        names = sorted(zf.namelist())
        if names != sorted(f"{n}.npy" for n in declared):
            raise _bad(path, None, f"holds members {names}, expected {sorted(f'{n}.npy' for n in declared)}")
        return _read_members(zf, path, declared, budget)


def read_format(source, *, name=None, size=None):
    """The ``format`` marker of a file written by :func:`save_npz`, or None if it is not one.

    ``source`` is a path, or an open binary file (an object store's: only the ranges the zip
    directory and the metadata member need are read), then with ``name`` for messages and
    ``size`` its size in bytes, which bounds the read as a file's size on disk does. Reads only
    the metadata member (bounded): used to recognise a file before replacing it.
    """
    try:
        budget = _budget(source, None) if size is None else MIN_BUDGET + MAX_RATIO * int(size)
        with zipfile.ZipFile(source) as zf:
            if f"{_META}.npy" not in zf.NameToInfo:
                return None
            text, _ = _read_member(zf, name or os.fspath(source), _META, None, budget)
        meta = json.loads(str(text[()]))
    except (OSError, ValueError, zipfile.BadZipFile, RecursionError, IndexError):
        return None
    return meta.get("format") if isinstance(meta, dict) else None
