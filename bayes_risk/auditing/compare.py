"""Two audits side by side (:doc:`/user_guide/audit`, Applying a remedy and auditing again)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from bayes_risk._constraints import HasMethods, check_value
from bayes_risk.exceptions import ValidationError

__all__ = ["compare_audits", "load_audit", "audit_summary"]

#: the columns of :func:`compare_audits`
COLUMNS = ["step", "measure", "unit", "direction", "threshold_before", "before", "status_before",
           "threshold_after", "after", "status_after", "change"]


def load_audit(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``summary.json`` of an audit folder.

    Raises
    ------
    ValidationError
        ``NOT_AN_AUDIT``: the folder holds no audit summary.
    """
    p = Path(path)
    f = p / "summary.json" if p.is_dir() else p
    try:
        summary = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValidationError(f"{str(p)!r} is not an audit folder: its summary.json cannot be "
                              f"read ({type(err).__name__}).", code="NOT_AN_AUDIT") from None
    if not isinstance(summary, dict) or summary.get("command") != "audit" or not isinstance(
            summary.get("verdicts"), list):
        raise ValidationError(f"{str(p)!r} is not an audit folder: its summary.json was not "
                              "written by an audit.", code="NOT_AN_AUDIT")
    summary.setdefault("folder", str(p if p.is_dir() else p.parent))
    return summary


def audit_summary(audit: Any) -> dict[str, Any]:
    """An audit's summary from its result, its summary (a dict) or its folder."""
    if isinstance(audit, dict):
        return audit
    if isinstance(audit, (str, os.PathLike)):
        return load_audit(audit)
    return check_value(audit, HasMethods(("to_dict",), "an AuditResult, its summary (a dict) "
                                         "or the path of an audit folder"), "an audit").to_dict()


#: the status word of a line carried from the release before the remedy as an upper bound
CARRIED = "upper bound"


def _word(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not assessed"
    return f"{CARRIED}, {row.get('status', '')}" if row.get("carried") else str(
        row.get("status", ""))


def compare_audits(before: Any, after: Any) -> pd.DataFrame:
    """The verdict lines of two audits of the same original, side by side.

    Parameters
    ----------
    before, after : AuditResult, dict or path
        The audits (an :class:`~bayes_risk.AuditResult`, its ``to_dict()`` or its folder).

    Returns
    -------
    DataFrame
        One row per verdict line of either audit: ``step``, ``measure``, ``unit``,
        ``direction``, each audit's threshold, value and status (``"not assessed"`` where it has
        no such line; ``"upper bound, exceeds"`` etc. for a line the audit carries from the
        release before the remedy, not measured), and ``change`` (after − before).

    Raises
    ------
    ValidationError
        ``ORIGINAL_DIFFERS``: the audits are of different originals; ``NOT_AN_AUDIT``: a folder
        that holds no audit.
    """
    b, a = audit_summary(before), audit_summary(after)
    if b.get("n_records") != a.get("n_records"):
        raise ValidationError(
            f"the audits are of different originals ({b.get('n_records')} and "
            f"{a.get('n_records')} records); compare audits of one original.",
            code="ORIGINAL_DIFFERS")
    sha = [(s.get("input_sha256") or {}).get((s.get("inputs") or {}).get("original"))
           for s in (b, a)]
    if all(sha) and sha[0] != sha[1]:
        raise ValidationError("the audits are of different originals (their original files' "
                              "SHA-256 differ); compare audits of one original.",
                              code="ORIGINAL_DIFFERS")
    key = ("step", "measure")
    rows_b = {tuple(v[k] for k in key): v for v in b["verdicts"]}
    rows_a = {tuple(v[k] for k in key): v for v in a["verdicts"]}
    out = []
    for k in [*rows_a, *(k for k in rows_b if k not in rows_a)]:
        vb, va = rows_b.get(k), rows_a.get(k)
        ref = va or vb
        x, y = (None if v is None else v.get("value") for v in (vb, va))
        both = all(isinstance(v, (int, float)) and math.isfinite(v) for v in (x, y))
        out.append({"step": k[0], "measure": k[1], "unit": ref.get("unit", ""),
                    "direction": ref.get("direction"),
                    "threshold_before": None if vb is None else vb.get("threshold"),
                    "before": x, "status_before": _word(vb),
                    "threshold_after": None if va is None else va.get("threshold"),
                    "after": y, "status_after": _word(va),
                    "change": y - x if both else None})
    return pd.DataFrame(out, columns=COLUMNS)
