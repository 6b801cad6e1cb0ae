"""Access to ``../shared`` (data, reference outputs) with a clear skip when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
_CANDIDATE = _ROOT.parent / "shared"
SHARED: Path | None = _CANDIDATE if (_CANDIDATE / "SPEC.md").is_file() else None


def shared_path(*parts: str) -> Path:
    """Path inside ``../shared``; skips the calling test when the folder or file is absent."""
    if SHARED is None:
        pytest.skip("../shared is not present (a user's clone has no shared/ folder)")
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"../shared/{'/'.join(parts)} is not present")
    return p
