"""Atomic writing of result files and folders: no half-written output is ever left behind."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_dir", "atomic_file", "write_json", "read_json", "to_jsonable",
           "rename_noreplace", "replace_checked", "path_identity", "remove_stale_siblings",
           "temporary_sibling", "temporary_name", "scratch_folder", "remove_scratch",
           "remove_live_temporaries", "current_umask", "file_slug", "check_new_folder"]


#: RENAME_NOREPLACE of Linux' renameat2(2): the rename fails (EEXIST) if the target exists
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _renameat2_noreplace(src: Path, dst: Path) -> bool:
    """Rename with ``RENAME_NOREPLACE`` (Linux); ``False`` where the call is unavailable."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


def rename_noreplace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename ``src`` to ``dst`` in one step, ``FileExistsError`` if anything is at ``dst``
    (``renameat2(RENAME_NOREPLACE)``, else a ``mkdir`` claim of ``dst`` replaced by ``src``)."""
    src, dst = Path(src), Path(dst)
    if _renameat2_noreplace(src, dst):
        return
    if src.is_dir() and not src.is_symlink():
        os.mkdir(dst)  # FileExistsError if taken
        try:
            os.replace(src, dst)  # replaces only our own empty claim
        except OSError as err:  # filled by another process in between: left to it
            raise FileExistsError(errno.EEXIST, f"{dst} was created meanwhile", str(dst)) from err
    else:
        os.link(src, dst)  # FileExistsError if taken
        os.unlink(src)


def path_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path`` itself (links not followed), ``None`` if nothing is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def replace_checked(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    expected: tuple[int, int] | None,
) -> None:
    """Put the finished ``src`` at ``dst``, replacing only what was there when the run began
    (``expected``: its :func:`path_identity`, ``None`` for nothing); else ``FileExistsError``,
    ``dst`` left untouched."""
    src, dst = Path(src), Path(dst)
    if expected is None:
        rename_noreplace(src, dst)
        return
    old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
    try:
        os.replace(dst, old)
    except FileNotFoundError:  # removed meanwhile: nothing to replace, nothing may be
        rename_noreplace(src, dst)
        return
    if path_identity(old) != expected:
        # another process put something else there since the check: give it back untouched
        with contextlib.suppress(OSError):
            rename_noreplace(old, dst)
        raise FileExistsError(
            errno.EEXIST, f"{dst} was replaced by another process meanwhile", str(dst))
    try:
        rename_noreplace(src, dst)
    except FileExistsError:
        raise FileExistsError(
            errno.EEXIST,
            f"{dst} was created by another process meanwhile (the previous one is kept as "
            f"{old.name})",
            str(dst),
        ) from None
    _remove(old)


def current_umask() -> int:
    """The process's ``umask``, read without changing it where the system tells it."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _as_created(path: str | os.PathLike[str], *, folder: bool) -> None:
    """Give a private file or folder the permissions ``open``/``mkdir`` give under the umask."""
    os.chmod(path, (0o777 if folder else 0o666) & ~current_umask())


#: a name kept as it is in a file name: ASCII letters, digits, ``_ . -``, starting with a letter
#: or digit, at most 64 characters, not ending in a dot (Windows drops it)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(?<!\.)")
#: the tail of a name made by :func:`file_slug` from another: ``-h`` and 12 hexadecimal digits
_SLUG_TAIL = re.compile(r"-h[0-9a-f]{12}$")
#: names Windows reserves whatever the extension
_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)),
                       *(f"LPT{i}" for i in range(10))})
#: names of the audit's own folders beside the targets' folders (``disclosure/original_risk``,
#: ``original_risk_2``, ...): a column of that name is given a made slug, so the two never meet
_AUDIT_FOLDER = re.compile(r"original_risk(_\d+)?")


def file_slug(name: str) -> str:
    """A safe, bounded, unique file-name part for the column name ``name``: kept when plain
    ASCII (at most 64), else its letters and digits plus ``-h`` and 12 hex digits of its SHA-256.
    """
    import hashlib
    import unicodedata

    name = str(name)
    if (_SAFE_NAME.fullmatch(name) and not _SLUG_TAIL.search(name)
            and name.split(".")[0].upper() not in _RESERVED
            and not _AUDIT_FOLDER.fullmatch(name)):
        return name
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    stem = re.sub(r"[^A-Za-z0-9]+", "_", ascii_).strip("_")[:40].rstrip("_") or "column"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{stem}-h{digest}"


#: the temporary files and folders this process has made and not yet renamed or removed
#: (:func:`remove_live_temporaries`: what a run that must end at once removes first)
_LIVE: set[str] = set()


def remove_live_temporaries() -> None:
    """Remove every temporary this process still holds (a run ending at once on a signal)."""
    for path in list(_LIVE):
        _remove(path)
        _LIVE.discard(path)


def _remove(path: str | os.PathLike[str]) -> None:
    """Remove a file or folder (a link itself, never its target); errors ignored."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def temporary_name(target: str | os.PathLike[str]) -> Path:
    """A new name ``.NAME.tmp-PID-XXXXXXXX`` beside ``target`` (:func:`remove_stale_siblings`)."""
    target = Path(target)
    return target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"


def _claim(target: Path, make: Any) -> Path:
    """A new :func:`temporary_name` beside ``target``, made by ``make(path)`` and tracked in
    :data:`_LIVE` before it exists (an interrupt at its creation leaves nothing behind)."""
    while True:
        tmp = temporary_name(target)
        _LIVE.add(str(tmp))
        try:
            make(tmp)
            return tmp
        except FileExistsError:
            _LIVE.discard(str(tmp))
        except BaseException:
            _remove(tmp)
            _LIVE.discard(str(tmp))
            raise


@contextlib.contextmanager
def temporary_sibling(target: Path) -> Iterator[Path]:
    """A new hidden folder beside ``target`` (umask permissions), removed if the block raises."""
    tmp: Path | None = None
    try:
        tmp = _claim(target, lambda t: t.mkdir(mode=0o700))
        _as_created(tmp, folder=True)
        yield tmp
    except BaseException:
        if tmp is not None:
            _remove(tmp)
        raise
    finally:
        if tmp is not None:
            _LIVE.discard(str(tmp))  # renamed into place, or removed


#: ``.NAME.tmp-PID-X`` (:func:`temporary_name`) or ``.NAME.old-PID`` (:func:`replace_checked`);
#: NAME may itself be such a name (a temporary beside a temporary: ``atomic_dir`` of a folder
#: that is a command's temporary output)
_STALE_RE = re.compile(r"\.(?P<name>.+)\.(?:(?P<tmp>tmp)-(?P<tpid>\d+)-[^.]*|old-(?P<opid>\d+))$")


def _temporary_of(name: str, target: str) -> tuple[list[int], bool] | None:
    """The process ids in a temporary's name for ``target`` (outermost first) and whether it is
    a temporary (not a previous output ``.NAME.old-PID``); ``None`` if not ``target``'s."""
    pids: list[int] = []
    is_tmp = True
    while (m := _STALE_RE.match(name)) is not None:
        if not pids:
            is_tmp = bool(m["tmp"])
        pids.append(int(m["tpid"] or m["opid"]))
        name = m["name"]
        if name == target:
            return pids, is_tmp
    return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale_siblings(target: str | os.PathLike[str]) -> tuple[list[str], list[str]]:
    """Remove the temporaries that killed runs left beside ``target`` (``.old`` ones only when
    ``target`` exists); return the names removed and the stale ones kept."""
    target = Path(target)
    removed: list[str] = []
    kept: list[str] = []
    parent = target.parent
    if not parent.is_dir():
        return removed, kept
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed, kept
    for entry in entries:
        found = _temporary_of(entry.name, target.name)
        if found is None:
            continue
        pids, is_tmp = found
        if any(_alive(pid) for pid in pids):
            continue
        if not is_tmp and not (target.exists() or target.is_symlink()):
            kept.append(entry.name)
            continue
        _remove(entry)
        if not (entry.exists() or entry.is_symlink()):
            removed.append(entry.name)
    return removed, kept


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary folder beside ``path`` that replaces it on success (only what was
    there at the start; nothing without ``overwrite``: ``FileExistsError``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_siblings(target)
    expected = path_identity(target)
    if expected is not None and not overwrite:
        raise FileExistsError(errno.EEXIST, f"{target} exists", str(target))
    with temporary_sibling(target) as tmp:  # removed on any exception
        yield tmp
        replace_checked(tmp, target, expected=expected)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside ``path``; rename it over ``path`` on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_siblings(target)
    tmpname: Path | None = None
    try:
        tmpname = _claim(target, lambda t: os.close(
            os.open(t, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)))
        _as_created(tmpname, folder=False)  # as ``open(path, "w")`` would make it
        with open(tmpname, mode) as fh:
            yield fh
        os.replace(tmpname, target)
    except BaseException:
        if tmpname is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmpname)
        raise
    finally:
        if tmpname is not None:
            _LIVE.discard(str(tmpname))


#: (temporary folder, kind) pairs this process has cleared of dead processes' scratch folders
_SCANNED: set[tuple[str, str]] = set()


def scratch_folder(kind: str) -> str:
    """A new private folder ``bayes-risk-KIND-PID-XXXXXXXX`` in the system's temporary folder
    (the caller removes it, :func:`remove_scratch`); the first call of a process for a folder
    and ``kind`` removes those of dead processes."""
    base = Path(tempfile.gettempdir())
    prefix = f"bayes-risk-{kind}-"
    pattern = re.compile(rf"{re.escape(prefix)}(\d+)-[^.]*$")
    # once per process and folder, with os.scandir and a prefix test: a shared /tmp holds tens
    # of thousands of entries (a Path per entry cost 0.2 s of CPU at 35,000), and every
    # identification run with replicates makes a folder
    if (str(base), kind) not in _SCANNED:
        with contextlib.suppress(OSError), os.scandir(base) as entries:
            for entry in entries:
                if not entry.name.startswith(prefix):
                    continue
                m = pattern.match(entry.name)
                if m is not None and not _alive(int(m[1])) \
                        and entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
        _SCANNED.add((str(base), kind))
    folder = tempfile.mkdtemp(prefix=f"bayes-risk-{kind}-{os.getpid()}-", dir=base)
    _LIVE.add(folder)
    return folder


def remove_scratch(folder: str) -> None:
    """Remove a folder made by :func:`scratch_folder`."""
    shutil.rmtree(folder, ignore_errors=True)
    _LIVE.discard(folder)


def to_jsonable(obj: Any) -> Any:
    """``obj`` with numpy/pandas scalars and arrays as Python objects; ``nan`` -> ``None``,
    ``±inf`` -> ``"inf"``/``"-inf"`` (strict JSON)."""
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
    if hasattr(type(obj), "__jsonable__"):  # a setting object with a JSON form (SynthesisSpec)
        return to_jsonable(obj.__jsonable__())
    return obj


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict, indented JSON, atomically; a ``summary.json`` gets the units of
    the rates, shares and counts it holds under ``"units"`` (:mod:`bayes_risk._units`)."""
    doc = to_jsonable(obj)
    if Path(path).name == "summary.json" and isinstance(doc, dict):
        from bayes_risk._units import units_of

        units = units_of(doc)
        if units:
            doc = {**doc, "units": units}
    with atomic_file(path) as fh:
        json.dump(doc, fh, indent=2, allow_nan=False)
        fh.write("\n")


def check_new_folder(root: Path, or_else: str = "") -> None:
    """Nothing when the folder ``root`` (an ``out=``) does not exist or is empty; else
    ``OUT_EXISTS`` asking for a new folder, ``or_else`` the other way out (the one place this
    is checked)."""
    from bayes_risk.exceptions import ValidationError

    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValidationError(f"out {str(root)!r} exists and is not an empty folder; give a new "
                              f"folder{or_else}.", code="OUT_EXISTS")


def read_json(
    path: str | os.PathLike[str], missing: str, code: str = "FILE_NOT_FOUND"
) -> dict[str, Any]:
    """Read a JSON object; ``ValidationError(missing, code=code)`` when the file is missing."""
    from bayes_risk.exceptions import ValidationError

    f = Path(path)
    if not f.is_file():
        raise ValidationError(missing, code=code)
    try:
        return json.loads(f.read_text())
    except json.JSONDecodeError as err:
        raise ValidationError(f"{f} is not valid JSON: {err}", code="FILE_UNREADABLE") from err
