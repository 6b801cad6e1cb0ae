"""Checksums of files (what ``sha256sum`` prints), with the standard library only: the command
line hashes its inputs before a sub-command imports numpy or pandas.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

__all__ = ["file_sha256", "json_sha256", "special_file"]

#: what a path is that is neither a regular file nor a folder, by its ``stat`` mode test
_NON_REGULAR = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when neither a regular file nor a folder (``"a named pipe (FIFO)"``), else
    ``None``: an input is read more than once, which a pipe or a device cannot give."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((what for test, what in _NON_REGULAR if test(mode)), None)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (64 hex digits) of a file's bytes: what ``sha256sum`` prints."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def json_sha256(obj: Any) -> str:
    """SHA-256 of a JSON document's content (keys sorted, no white space), whatever its layout."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()
