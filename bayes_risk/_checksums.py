"""Checksums of files: what ``sha256sum`` prints.

Standard library only: the command line hashes its input files before a sub-command imports
numpy or pandas (some set thread and allocator settings that must precede those imports).
Table fingerprints, which identify the records whatever file holds them, are in
:mod:`bayes_risk.data.fingerprint`.
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
    """What ``path`` is (links followed) when it is neither a regular file nor a folder, e.g.
    ``"a named pipe (FIFO)"``; ``None`` for a regular file, a folder or a missing path.

    Such a path is refused before it is read: an input is read more than once (hashed for
    ``summary.json``, then parsed), which a pipe cannot give (the first reader empties it, or
    waits forever for a writer), and a device such as ``/dev/zero`` never ends.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((what for test, what in _NON_REGULAR if test(mode)), None)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, read in blocks: what ``sha256sum`` prints.

    Identifies the file itself (unlike a table fingerprint): the checksums that
    ``summary.json`` records for the inputs of a run, and those a saved synthesizer keeps for
    its arrays.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def json_sha256(obj: Any) -> str:
    """SHA-256 of a JSON document's content (keys sorted, no white space): the same for any
    layout of the same values, so that a file can record the checksum of its own other fields
    (``model.json`` does, under ``"sha256"``).

    Parameters
    ----------
    obj : JSON-serialisable object
        As :func:`json.load` returns it (dicts, lists, strings, numbers, booleans, ``None``).

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()
