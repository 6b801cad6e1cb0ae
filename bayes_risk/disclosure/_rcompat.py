"""How R turns numbers into text (``as.character``, ``format()``) and sorts text (the C locale),
for the synthpop compatibility mode: two of synthpop 1.9-2's results depend on them
(:doc:`/methods/compatibility`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = ["r_as_character", "r_format", "c_sort"]


def _sci_parts(x: float, digits: int) -> tuple[int, int, str]:
    """Exponent, number of significant digits and significant digits of ``|x|`` at ``digits``."""
    mant, ex = f"{abs(x):.{digits - 1}e}".split("e")
    sig = mant.replace(".", "").rstrip("0") or "0"
    return int(ex), len(sig), sig


def r_as_character(x: float) -> str:
    """R's ``as.character`` of one double: 15 significant digits, fixed or scientific notation
    (whichever is narrower, fixed on a tie), e.g. ``100000 -> "1e+05"``, ``-115800 ->
    "-115800"``."""
    x = float(x)
    if math.isnan(x):
        return "NA"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    ex, nsig, sig = _sci_parts(x, 15)
    neg = x < 0
    rgt = max(nsig - ex - 1, 0)
    fixed_w = int(neg) + (ex + 1 if ex >= 0 else 1) + (rgt + 1 if rgt else 0)
    sci_w = int(neg) + (nsig + 1 if nsig > 1 else nsig) + (4 if abs(ex) < 100 else 5)
    if fixed_w <= sci_w:
        return f"{x:.{rgt}f}"
    mant = sig[0] + ("." + sig[1:] if nsig > 1 else "")
    return f"{'-' if neg else ''}{mant}e{'+' if ex >= 0 else '-'}{abs(ex):02d}"


def r_format(values: np.ndarray) -> list[str | None]:
    """R's ``format()`` of a double vector (``digits = 7``): one common notation, number of
    decimals and width (right-justified); missing values stay missing (``None``)."""
    v = np.asarray(values, dtype=np.float64)
    fin = np.isfinite(v)
    if not fin.any():
        return [None if math.isnan(x) else r_as_character(x) for x in v]
    neg = 0
    mxsl, rgt, mxns, mxl, mnl = 1, 0, 1, -(10**9), 10**9
    for x in np.unique(v[fin]):
        if x == 0:
            kp, nsig = 0, 1
        else:
            kp, nsig, _ = _sci_parts(float(x), 7)
        neg_i = int(x < 0)
        neg = max(neg, neg_i)
        left = kp + 1
        mxsl = max(mxsl, neg_i + (left if left > 0 else 1))
        rgt = max(rgt, nsig - left)
        mxl, mnl = max(mxl, left), min(mnl, left)
        mxns = max(mxns, nsig)
    if mxl < 0:
        mxsl = 1 + neg
    rgt = max(rgt, 0)
    w_fixed = mxsl + rgt + (rgt != 0)
    e = 2 if (mxl > 100 or mnl <= -99) else 1
    d = mxns - 1
    w_sci = neg + (d > 0) + d + 4 + e
    # format each distinct value once
    uv, inv = np.unique(v, return_inverse=True)
    if w_fixed <= w_sci:
        txt = [None if math.isnan(x) else f"{x:>{w_fixed}.{rgt}f}" for x in uv]
    else:
        txt = [None if math.isnan(x) else f"{x:>{w_sci}.{d}e}" for x in uv]
    return [txt[i] for i in inv.ravel()]


def c_sort(labels: Iterable[str]) -> list[str]:
    """Labels in R's text order under the C locale (byte order of the UTF-8 text)."""
    return sorted(labels, key=lambda s: s.encode("utf-8"))
