"""Differential privacy of a release, where it is defined: the ε of the multinomial–Dirichlet
synthesizer (Machanavajjhala et al. 2008, as McClure & Reiter 2012 use it), reported beside the
Bayesian attribute risk of the same release (:doc:`/methods/privacy`).

One definition: :func:`dirichlet_epsilon` is the formula, :func:`release_privacy` reads a
release's manifest and applies it; the model (:class:`bayes_risk.models.DPMultinomial`), the
attribute risk, the audit and the command line call them. Imports numpy only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from bayes_risk._constraints import Interval, check_params
from bayes_risk.exceptions import ValidationError

__all__ = ["PrivacyGuarantee", "beside_attribute", "dirichlet_alpha", "dirichlet_epsilon",
           "release_privacy", "MECHANISM", "NEIGHBOURS"]

#: the ``extra`` field of a release's manifest in which the synthesizer records its mechanism
EXTRA_FIELD = "differential_privacy"
#: the mechanism whose ε the package defines
MECHANISM = ("multinomial–Dirichlet synthesizer (Machanavajjhala et al. 2008): each synthetic "
             "dataset draws its cell probabilities from Dirichlet(α + cell counts), then its n "
             "records from them")
#: what differential privacy compares: bounded neighbours, as Machanavajjhala et al. (2008)
NEIGHBOURS = ("tables of the same number of records n over the same cells (the columns' "
              "levels), differing in one record's values; n and the levels are public")
#: post-processing steps (``bayes_risk.disclosure.sdc``) that read the release alone and so
#: keep its guarantee; any other (``remove_*`` reads the confidential table) ends it
_POST_PROCESSING_KEEPS = ("bottom_top_coding", "smoothing")


#: the arguments of ``dirichlet_epsilon`` and ``dirichlet_alpha``, checked at once
_ARGUMENT_CHECKS = {"alpha": Interval(float, 0, closed="neither"),
                    "epsilon": Interval(float, 0, closed="neither"),
                    "n_records": Interval(int, 1), "m": Interval(int, 1)}


def _checked(**values: Any) -> dict[str, Any]:
    return check_params(values, {k: _ARGUMENT_CHECKS[k] for k in values})


def dirichlet_epsilon(*, alpha: float, n_records: int, m: int = 1) -> float:
    """ε of ``m`` synthetic datasets of ``n_records`` records each, drawn by the
    multinomial–Dirichlet synthesizer with prior count ``alpha`` in every cell.

    ``ε = m · log(1 + n / α)``: the largest log-ratio of the probabilities of one release
    under two neighbouring tables, attained by a table with one record alone in its cell,
    that record moved, and every synthetic record in its cell (:doc:`/methods/privacy`).

    Parameters
    ----------
    alpha : float
        The Dirichlet prior count of each cell (``> 0``).
    n_records : int
        Records of each synthetic dataset (the confidential table's ``n``).
    m : int, default 1
        Synthetic datasets released, each from its own draw of the cell probabilities.

    Returns
    -------
    float

    Examples
    --------
    >>> round(dirichlet_epsilon(alpha=1.0, n_records=100), 4)   # α = 1, n = 100: log 101
    4.6151
    >>> a = dirichlet_alpha(epsilon=1.0, n_records=100)
    >>> round(dirichlet_epsilon(alpha=a, n_records=100, m=3), 12)
    3.0
    """
    v = _checked(alpha=alpha, n_records=n_records, m=m)
    return v["m"] * math.log1p(v["n_records"] / v["alpha"])


def dirichlet_alpha(*, epsilon: float, n_records: int) -> float:
    """The prior count per cell that gives each synthetic dataset of ``n_records`` records
    the ε ``epsilon``: ``α = n / (e^ε − 1)`` (the inverse of :func:`dirichlet_epsilon`).

    Parameters
    ----------
    epsilon : float
        ε of one synthetic dataset (``> 0``).
    n_records : int
        Records of each synthetic dataset.

    Returns
    -------
    float
    """
    v = _checked(epsilon=epsilon, n_records=n_records)
    return v["n_records"] / math.expm1(v["epsilon"])


@dataclass(frozen=True)
class PrivacyGuarantee:
    """The differential privacy of a release (:func:`release_privacy`).

    Attributes
    ----------
    epsilon : float
        ε of the whole release (``inf``: the guarantee was ended, ``reason`` says how).
    epsilon_per_dataset : float
        ε of one synthetic dataset.
    alpha : float
        Dirichlet prior count of each cell.
    n_records : int
        Records of each synthetic dataset.
    m : int
        Synthetic datasets (each spends ``epsilon_per_dataset``: sequential composition,
        attained here).
    mechanism, neighbours : str
        What was made private, against which neighbouring tables.
    reason : str
        Why ε is infinite (empty when the guarantee holds).
    """

    epsilon: float
    epsilon_per_dataset: float
    alpha: float
    n_records: int
    m: int
    mechanism: str = MECHANISM
    neighbours: str = NEIGHBOURS
    reason: str = ""

    @property
    def bayes_factor_bound(self) -> float:
        """``e^ε``: no record's Bayes factor of its true values (the worst-case intruder's, who
        knows every other record) can exceed it (:doc:`/methods/privacy`)."""
        return math.exp(self.epsilon) if self.epsilon < 700 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with ``bayes_factor_bound``."""
        return {**asdict(self), "bayes_factor_bound": self.bayes_factor_bound}

    def describe(self) -> str:
        """One line: ε and what it rests on."""
        if self.reason:
            return f"differential privacy: none ({self.reason})"
        per = (f" ({self.m} datasets × {self.epsilon_per_dataset:.4g})" if self.m > 1 else "")
        return (f"differential privacy: ε = {self.epsilon:.4g}{per}, α = {self.alpha:.4g} per "
                f"cell, n = {self.n_records:,}; no record's Bayes factor can exceed e^ε = "
                f"{self.bayes_factor_bound:.4g}")


def release_privacy(synthetic: Any) -> PrivacyGuarantee | None:
    """The ε of a release where one is defined: a release of the multinomial–Dirichlet
    synthesizer (:class:`~bayes_risk.models.DPMultinomial`), whose manifest records its prior
    count; ε is recomputed from it and the release's own ``m`` (:func:`dirichlet_epsilon`).

    Parameters
    ----------
    synthetic : SyntheticData, DataFrame or list of DataFrames
        The release (plain tables record no mechanism: ``None``).

    Returns
    -------
    PrivacyGuarantee or None
        ``None`` when the release does not record a mechanism with a defined ε; a guarantee
        with ``epsilon = inf`` and its ``reason`` when it was post-processed with the
        confidential table (``remove_*`` of :func:`bayes_risk.sdc`), which ends it.
    """
    extra = getattr(synthetic, "extra", None)
    record = (extra or {}).get(EXTRA_FIELD) if isinstance(extra, dict) else None
    if not isinstance(record, dict):
        return None
    try:
        alpha, n = float(record["alpha"]), int(record["n_records"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValidationError(f"the release's manifest records differential privacy without a "
                              f"valid alpha and n_records ({record!r}); the manifest is "
                              "damaged.", code="MANIFEST_INVALID") from e
    m = int(getattr(synthetic, "m", 1))
    per = dirichlet_epsilon(alpha=alpha, n_records=n)
    ended = [s.get("operation") for s in (extra.get("post_processing") or [])
             if isinstance(s, dict) and s.get("operation") not in _POST_PROCESSING_KEEPS]
    if ended:
        return PrivacyGuarantee(math.inf, math.inf, alpha, n, m, reason=(
            f"post-processed with the confidential table ({', '.join(map(str, ended))}), which "
            "ends the guarantee of the synthesizer's ε"))
    return PrivacyGuarantee(m * per, per, alpha, n, m)


def beside_attribute(guarantee: Any, largest_bayes_factor: float | None = None) -> str:
    """The sentence that reads a release's ε beside its attribute risk (the attribute
    summary, the audit's attribute line and section): ε, the bound ``e^ε`` it puts on every
    record's Bayes factor of its true values, and the largest factor estimated.

    Parameters
    ----------
    guarantee : PrivacyGuarantee or its ``to_dict()``
    largest_bayes_factor : float, optional
        The largest Bayes factor of the records' true values the attribute risk estimated.

    Returns
    -------
    str
    """
    g = guarantee.to_dict() if isinstance(guarantee, PrivacyGuarantee) else dict(guarantee)
    if g.get("reason"):
        return f"no ε of differential privacy: {g['reason']}"
    eps, m = float(g["epsilon"]), int(g["m"])
    per = f", {m} datasets × {float(g['epsilon_per_dataset']):.4g}" if m > 1 else ""
    bound = float(g["bayes_factor_bound"])
    text = (f"the release is ε-differentially private with ε = {eps:.4g} (prior count "
            f"{float(g['alpha']):.4g} per cell, n = {int(g['n_records']):,}{per}), which bounds "
            f"every record's Bayes factor of its true values by e^ε = {bound:.4g}")
    if largest_bayes_factor is not None and math.isfinite(float(largest_bayes_factor)):
        bf = float(largest_bayes_factor)
        text += (f"; the largest estimated here is {bf:.3g}"
                 + (f" ({bf / bound:.2g} of the bound)" if math.isfinite(bound) else ""))
    return text
