"""Atomic writing of result files and folders: no half-written output is ever left behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_dir", "atomic_file", "write_json", "read_json", "to_jsonable"]


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; on success it replaces ``path`` in one rename.

    On an exception the temporary folder is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists():
        if not overwrite:
            shutil.rmtree(tmp, ignore_errors=True)
            raise FileExistsError(f"{target} exists")
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
    else:
        os.replace(tmp, target)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside ``path`` for writing; rename over ``path`` on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmpname = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    os.close(fd)
    try:
        with open(tmpname, mode) as fh:
            yield fh
        os.replace(tmpname, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmpname)
        raise


def to_jsonable(obj: Any) -> Any:
    """Convert numpy/pandas scalars and arrays (and nan/inf) into JSON-safe Python objects.

    ``nan`` and ``inf`` become ``None`` / ``"inf"`` / ``"-inf"`` so that the file is strict JSON.
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        if np.isnan(f):
            return None
        if np.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict, indented JSON, atomically."""
    with atomic_file(path) as fh:
        json.dump(to_jsonable(obj), fh, indent=2, allow_nan=False)
        fh.write("\n")


def read_json(path: str | os.PathLike[str], missing: str) -> dict[str, Any]:
    """Read a JSON object written by :func:`write_json` (manifests, model settings).

    Parameters
    ----------
    path : path-like
        The file.
    missing : str
        The error message when the file does not exist (it says what the folder should be).

    Raises
    ------
    ValidationError
        If the file is missing or is not valid JSON.
    """
    from bayes_risk.exceptions import ValidationError

    f = Path(path)
    if not f.is_file():
        raise ValidationError(missing)
    try:
        return json.loads(f.read_text())
    except json.JSONDecodeError as err:
        raise ValidationError(f"{f} is not valid JSON: {err}") from err
