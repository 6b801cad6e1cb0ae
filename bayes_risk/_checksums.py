"""Checksums of files (what ``sha256sum`` prints), with the standard library only: the command
line hashes its inputs before a sub-command imports numpy or pandas.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

__all__ = ["file_sha256", "json_sha256", "special_file", "folder_checksums", "checksum_problem"]

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


def folder_checksums(folder: str | os.PathLike[str], own: str, body: Any) -> dict[str, str]:
    """The checksums a folder records in its JSON file ``own`` (a model's ``model.json``, a
    release's ``manifest.json``): the SHA-256 of every other regular file of ``folder``, and
    under ``own`` that of ``body``, the JSON file's other fields (:func:`json_sha256`)."""
    sums = {f.name: file_sha256(f) for f in sorted(os.scandir(folder), key=lambda e: e.name)
            if f.is_file() and f.name != own}
    sums[own] = json_sha256(body)
    return sums


def checksum_problem(folder: str | os.PathLike[str], sums: dict[str, str], own: str,
                     body: Any, *, files: bool = True, json_file: bool = True) -> str | None:
    """How ``folder`` differs from the checksums ``sums`` its JSON file ``own`` records (``None``:
    it does not): a file missing, a file changed or truncated (``files``), the JSON file's other
    fields ``body`` edited (``json_file``; not checked when ``sums`` has no entry for it)."""
    if files:
        for name, digest in sums.items():
            if name == own:
                continue
            f = os.path.join(folder, name)
            if os.path.basename(name) != name or not os.path.isfile(f):
                return f"{name} is missing"
            if file_sha256(f) != digest:
                return (f"{name} was changed, truncated or replaced after it was written (its "
                        f"SHA-256 differs from the one in {own})")
    if json_file and own in sums and json_sha256(body) != sums[own]:
        return (f"{own} was edited after it was written (its content no longer matches the "
                "checksum it records under 'sha256')")
    return None
