"""Access to ``../shared`` (data, reference outputs) with a clear skip when it is absent."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
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


def shared_pages() -> dict[str, list[str]]:
    """``docs/conf.py``'s ``SHARED_PAGES``: the gallery pages that run only with ``../shared``,
    and the files of it each reads (read from the source: running the file sets environment
    variables)."""
    tree = ast.parse((_ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "SHARED_PAGES":
            return ast.literal_eval(node.value)
    raise AssertionError("docs/conf.py defines no SHARED_PAGES")


def missing_table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """``a`` categorical (20 % empty), ``b`` continuous (about 15 % empty, 10 % code -8; its
    missingness depends on ``c``), ``c`` categorical, ``d`` continuous complete."""
    rng = np.random.default_rng(seed)
    c = rng.choice(["p", "q"], n)
    a = rng.choice(["x", "y", "z"], n).astype(object)
    a[rng.random(n) < 0.2] = None
    b = rng.normal(50, 10, n).round(1)
    u = rng.random(n)
    p_na = np.where(c == "p", 0.25, 0.05)
    b[u < p_na] = np.nan
    b[(u >= p_na) & (u < p_na + 0.10)] = -8.0
    d = np.where(np.isnan(b), 1.0, 5.0) + rng.normal(0, 0.3, n)  # depends on b being empty
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})
