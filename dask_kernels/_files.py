"""Files read whole into memory: what makes one unfit to read, found by one ``stat`` before it is opened."""

from __future__ import annotations

import os
import stat

#: A JSON or TOML file read whole (a saved model's model.json, a map spec, a job file) larger than
#: this is refused before it is parsed.
MAX_JSON_BYTES = 256 * 2**20

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def file_problem(path: str | os.PathLike, max_bytes: int) -> str | None:
    """Why local file ``path`` must not be read whole, as a phrase ("is a FIFO (named pipe), not a
    regular file", "holds N bytes, more than ..."), or None. A FIFO would block the read forever
    and a device (a link to /dev/zero) never ends, so only regular files of at most ``max_bytes``
    pass. Follows symbolic links: the target is what a read would get. Raises
    ``FileNotFoundError`` when there is nothing at ``path``."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for is_kind, k in _KINDS if is_kind(st.st_mode)), "a special file")
        return f"is {kind}, not a regular file"
    if st.st_size > max_bytes:
        return f"holds {st.st_size:,} bytes, more than the {max_bytes:,} it can"
    return None
