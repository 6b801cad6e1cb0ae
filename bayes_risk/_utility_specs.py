"""The grouped arguments of the utility measures: :class:`PropensitySpec` (the pMSE's
propensity model) and :class:`OverlapSpec` (the interval overlap), with the combining rules
they name (public as ``bayes_risk.utility.PropensitySpec`` ...). The module level holds the
standard library only: the parsers read the fields, and the package ``bayes_risk.utility``
imports its measures (numpy) when it is imported."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from bayes_risk._constraints import (
    COLUMN_NAMES,
    InstanceOf,
    Interval,
    Options,
    Relation,
    Requires,
    SequenceOf,
    check_fields,
    check_value,
    checked,
)
from bayes_risk._specs import cli_option

__all__ = ["PropensitySpec", "OverlapSpec", "PROPENSITY_METHODS", "COMBINING_RULES",
           "check_rules", "imputed_columns"]


def imputed_columns(columns: Sequence[str]) -> list[str]:
    """``--imputed``'s columns as ``imputed=``: ``[]`` for ``none`` (missing values compared as
    a level), else the columns."""
    return [] if [c.lower() for c in columns] == ["none"] else list(columns)


#: the nulls of the pMSE
NULLS = ("auto", "theory", "perm", "pairs")
#: the classifiers of ``PropensitySpec.method``
PROPENSITY_METHODS = ("logit", "cart")
#: the model families of ``OverlapSpec.family``
FAMILIES = ("ols", "logit", "poisson")
#: the combining rules by generation scheme, with the paper each follows
COMBINING_RULES: dict[str, str] = {
    "partial": "Reiter (2003)",
    "full-same-n": "Raab, Nowok & Dibben (2016)",
    "full-population": "Raghunathan, Reiter & Rubin (2003), with Reiter (2002) for T_f <= 0",
    "partial-sample": "Reiter (2003) with the finite-population correction of the sample "
                      "(sampling with synthesis, Drechsler & Reiter 2010)"}
#: ``--combining-rules`` as the command line states it (utility and audit)
RULES_HELP = (
    "combining rules of the synthetic intervals: partial (Reiter 2003), full-same-n (full "
    "synthesis of the same units; Raab, Nowok & Dibben 2016), full-population (samples from "
    "synthetic populations; Raghunathan, Reiter & Rubin 2003), partial-sample (a sample of the "
    "census from partially synthetic populations; Drechsler & Reiter 2010). Default auto: the "
    "generation "
    "recorded in the release's manifest, else inferred from the synthesized columns")


#: ``imputed=`` of the utility measures and the audit: "auto" or the imputed columns
IMPUTED = [Options(("auto",), listed=True),
           SequenceOf(COLUMN_NAMES.item, "column names ([] for none)", min_len=0)]


def check_rules(rules: Any, name: str = "rules") -> str:
    """``rules`` if it names a generation scheme's rules, else a ``ValidationError``."""
    return check_value(rules, Options(COMBINING_RULES), name, code="UNKNOWN_COMBINING_RULES")


@dataclass(frozen=True)
class PropensitySpec:
    """The propensity model of the pMSE: its kind, terms, columns and fitting settings, and
    the null distribution its value is read against.

    Parameters
    ----------
    method : {"logit", "cart"}
        Logistic regression with interactions (synthpop's values), or a classification tree
        pruned as rpart at ``cp`` (:doc:`/methods/compatibility`).
    max_order : int
        Interactions up to order ``max_order + 1`` (0: synthpop's ``t ~ .``; 1: ``t ~ .^2``).
    columns : sequence of str, optional
        Columns entering the model (default: all; synthpop's ``vars``).
    cp, min_leaf, min_split, max_depth : CART settings (see ``method``).
    max_iter : int
        Maximum IRLS iterations of the logistic model.
    null : {"auto", "theory", "perm", "pairs"}
        Null distribution: ``χ²`` moments (logit only), permuted labels (complete synthesis
        only), or pairs of synthetic datasets (``m >= 2``). ``"auto"``: theory for logit; for
        CART perm (complete) or pairs.
    n_perm : int
        Permutations of ``null="perm"`` (synthpop uses 50).

    Examples
    --------
    >>> PropensitySpec(method="cart", min_leaf=10).max_order
    1
    """

    method: Literal["logit", "cart"] = field(default="logit", metadata=cli_option(
        "--pmse", "propensity model of the pMSE (default logit: synthpop's utility.gen design)",
        choices=PROPENSITY_METHODS)
        | checked(Options(PROPENSITY_METHODS)))
    max_order: int = field(default=1, metadata=cli_option(
        "--max-order", "logit pMSE: interactions of up to N + 1 columns: 0 = main effects, 1 = "
        "plus all two-way interactions (default 1, as synthpop's maxorder), 2 = plus three-way "
        "...; a design with more coefficients than records is refused (DESIGN_TOO_LARGE)",
        type=int, metavar="N")
        | checked(Interval(int, 0)))
    columns: Sequence[str] | None = field(default=None, metadata=checked([COLUMN_NAMES, None]))
    cp: float = field(default=1e-3, metadata=checked(
        Interval(float, 0)))
    min_leaf: int = field(default=5, metadata=checked(
        Interval(int, 1)))
    min_split: int = field(default=20, metadata=checked(
        Interval(int, 1)))
    max_depth: int = field(default=30, metadata=checked(
        Interval(int, 1)))
    max_iter: int = field(default=100, metadata=checked(
        Interval(int, 1)))
    null: Literal["auto", "theory", "perm", "pairs"] = field(default="auto", metadata=cli_option(
        "--null", "pMSE null: chi-square theory (logit), label permutations, or pairs of "
        "synthetic datasets (default auto: theory for logit, perm/pairs for cart)",
        choices=NULLS) | checked(Options(NULLS)))
    n_perm: int = field(default=100, metadata=cli_option(
        "--n-perm", "permutations for --null perm (default 100)", type=int, metavar="B")
        | checked(Interval(int, 2)))

    #: the fields against each other (checked by ``check_fields``)
    RELATIONS: ClassVar[tuple[Relation, ...]] = (
        Requires("null", "method", when=("theory",), equal=("logit",), code="INVALID_ARGUMENT",
                 why="its chi-square null holds for a parametric propensity model; a CART "
                 "one takes the 'perm' or 'pairs' null"),)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.columns is not None:
            object.__setattr__(self, "columns", tuple(self.columns))


@dataclass(frozen=True)
class OverlapSpec:
    """The interval-overlap figures of :func:`utility_summary`.

    Parameters
    ----------
    estimands : str or sequence of str, optional
        statsmodels formulas (e.g. ``"Income ~ Age + C(Marital)"``) whose coefficients are the
        estimands. Default: means and level proportions of the synthesized columns.
    family : {"ols", "logit", "poisson"}
        Model family of the formulas.
    alpha : float
        ``1 −`` confidence level of the intervals.
    rules : {"auto", "partial", "full-same-n", "full-population", "partial-sample"}
        Combining rules of the synthetic intervals; ``"auto"``: the manifest's generation
        scheme, else inferred from the synthesized columns.

    Examples
    --------
    >>> OverlapSpec(estimands="Income ~ Age", alpha=0.1).estimands
    ('Income ~ Age',)
    """

    estimands: str | Sequence[str] | None = field(default=None, metadata=cli_option(
        "--formula", 'statsmodels formulas whose coefficients are compared, e.g. "Income ~ Age '
        '+ C(Marital)" (default estimands: means and proportions of the synthesized columns)',
        nargs="+", metavar="FORMULA"))
    family: Literal["ols", "logit", "poisson"] = field(default="ols", metadata=cli_option(
        "--family", "model family of the formulas (default ols)", choices=FAMILIES)
        | checked(Options(FAMILIES)))
    alpha: float = field(default=0.05, metadata=cli_option(
        "--alpha", "1 - confidence level of the intervals (default 0.05)", type=float,
        metavar="A")
        | checked(Interval(float, 0, 1, closed="neither")))
    rules: Literal["auto", "partial", "full-same-n", "full-population", "partial-sample"] = field(
        default="auto", metadata=cli_option("--combining-rules", RULES_HELP,
                                            choices=("auto", *COMBINING_RULES)))

    def __post_init__(self) -> None:
        if self.estimands is not None:
            formulas = ((self.estimands,) if isinstance(self.estimands, str)
                        else tuple(self.estimands))
            for f in formulas:
                check_value(f, InstanceOf(str, "formula strings"), "OverlapSpec.estimands")
            object.__setattr__(self, "estimands", formulas)
        check_fields(self)
        if self.rules != "auto":
            check_rules(self.rules, "OverlapSpec.rules")
