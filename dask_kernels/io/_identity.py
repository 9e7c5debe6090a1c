"""Identity of an input file (size and modification time), re-checked while a job reads it."""

import json


class InputChangedError(RuntimeError):
    """An input file changed (or disappeared) while a job was reading it."""


def _stat(path, storage_options):
    import fsspec

    fs, p = fsspec.core.url_to_fs(path, **(storage_options or {}))
    info = fs.info(p)
    return int(info["size"]), str(info.get("mtime", info.get("LastModified", info.get("ETag", ""))))


class FileIdentity:
    """Size and modification time of a file as first seen; :meth:`check` compares them again.

    Picklable (travels with tasks). Like make or rsync it trusts size + mtime: rereading a large
    file to hash it would cost as much as featurizing it (block contents are hashed as they are
    read instead, see the store's done records).
    """

    def __init__(self, path, storage_options=None, size=None, mtime=None):
        self.path, self.storage_options = str(path), storage_options
        if size is None:
            size, mtime = _stat(self.path, storage_options)
        self.size, self.mtime = int(size), str(mtime)

    def check(self):
        """Raise :class:`InputChangedError` naming the file if it is not the file first seen."""
        try:
            now = _stat(self.path, self.storage_options)
        except FileNotFoundError:
            raise InputChangedError(f"{self.path}: the input file disappeared while the job was reading it") from None
        if now != (self.size, self.mtime):
            raise InputChangedError(
                f"{self.path}: the input file changed while the job was reading it (size {self.size} -> {now[0]} "
                f"bytes, modification time {self.mtime} -> {now[1]}); refusing to mix old and new rows. Re-run "
                "the job once the file is final: finished blocks whose rows did not change are kept.")

    def __repr__(self):
        return f"FileIdentity({json.dumps(self.path)}, size={self.size}, mtime={self.mtime})"
