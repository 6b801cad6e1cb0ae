"""The arguments of anonymeter's attacks (:func:`~bayes_risk.attacks.singling_out_risk`,
:func:`~bayes_risk.attacks.linkability_risk`, :func:`~bayes_risk.attacks.inference_risk`), each
with its option of ``bayes-risk attacks`` and, for a plain integer, its check, which the
attack makes by the same table (:func:`bayes_risk._constraints.check_params`); the grouped
ones: :class:`PredicateSpec` (singling out's predicates) and :class:`GuessSpec` (a right
guess of the inference), validated when built.

Imports only the standard library at module level, as the spec modules (``bayes-risk --help``
imports no numpy); not in ``bayes_risk.attacks``, whose package imports the attacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bayes_risk._constraints import (
    COLUMN_NAMES,
    Flag,
    Interval,
    SequenceOf,
    check_fields,
    check_value,
    checked,
)
from bayes_risk._specs import cli_option, split_lists

__all__ = ["PredicateSpec", "GuessSpec", "parse_modes", "parse_column_lists", "two_tables"]


def parse_modes(modes: list[str]) -> list[str]:
    """``--singling-out``'s modes, each once; ``none``: no mode (no singling out)."""
    return [m for m in dict.fromkeys(modes) if m != "none"]


def parse_column_lists(texts: list[str]) -> tuple[list[str], ...]:
    """``--linkability``'s two comma-separated lists of columns (``Age,Urban Income``)."""
    from bayes_risk.exceptions import ValidationError

    out = tuple(split_lists(texts))
    for text, cols in zip(texts, out, strict=True):
        if not cols:
            raise ValidationError("--linkability: expected comma-separated lists of columns, "
                                  f"e.g. Age,Urban Income,Educ. Got {text!r}.",
                                  code="BAD_OPTION_VALUE")
    return out


@dataclass(frozen=True)
class PredicateSpec:
    """The predicates of the singling-out attack
    (:func:`~bayes_risk.attacks.singling_out_risk`'s ``predicates=``).

    Parameters
    ----------
    n_cols : int
        Columns of a multivariate predicate (anonymeter's 3).
    columns : sequence of str, optional
        The columns the predicates may use (default: every column of the original).
    max_attempts : int or None
        Multivariate candidates tried at most per dataset (anonymeter's 10,000,000; ``None``:
        no limit).

    Examples
    --------
    >>> PredicateSpec(n_cols=2).max_attempts
    10000000
    """

    n_cols: int = field(default=3, metadata=cli_option(
        "--n-cols", "columns of a multivariate predicate (default 3)", type=int, metavar="N",
        group="singling out") | checked(Interval(int, 1)))
    columns: Sequence[str] | None = field(default=None, metadata=cli_option(
        "--columns", "columns the predicates may use (default: every column)", nargs="+",
        metavar="COL", group="singling out") | checked([COLUMN_NAMES, None]))
    max_attempts: int | None = field(default=10_000_000, metadata=cli_option(
        "--max-attempts", "multivariate candidates tried at most per dataset (default 10000000, "
        "anonymeter's)", type=int, metavar="N", group="singling out")
        | checked([Interval(int, 1), None]))

    __post_init__ = check_fields  # the fields' table is the whole check


@dataclass(frozen=True)
class GuessSpec:
    """When the inference intruder's guess of a secret is right
    (:func:`~bayes_risk.attacks.inference_risk`'s ``guess=``).

    Parameters
    ----------
    regression : bool or None
        ``True``: a guess is right within ``tolerance``; ``False``: when equal; ``None``
        (default): within ``tolerance`` for a numeric secret, equal for a categorical one.
        (anonymeter 1.1.0's constructor takes ``regression=False`` by default: equality for
        every column.)
    tolerance : float
        Largest relative difference ``|guess − value| / |guess|`` of a right guess (anonymeter's
        0.05).

    Examples
    --------
    >>> GuessSpec(tolerance=0.1).regression is None
    True
    """

    regression: bool | None = field(default=None, metadata=cli_option(
        "--regression", "whether a guess is right within --tolerance (yes) or only when equal "
        "(no); auto (default): within it for a numeric secret, equal for a categorical one "
        "(anonymeter 1.1.0's own default is no)", choices=("auto", "yes", "no"),
        parse={"auto": None, "yes": True, "no": False}.get, group="inference")
        | checked([Flag(), None]))
    tolerance: float = field(default=0.05, metadata=cli_option(
        "--tolerance", "largest relative difference |guess - value| / |guess| of a right "
        "numeric guess (default 0.05, anonymeter's)", type=float, metavar="T",
        group="inference") | checked(Interval(float, 0)))

    __post_init__ = check_fields  # the fields' table is the whole check


#: the columns of the linkability intruder's two tables (a table of one column may be named
#: alone: :func:`two_tables` lists it)
TWO_TABLES = SequenceOf(COLUMN_NAMES, "lists of columns, the intruder's two tables, e.g. "
                        "(['Age', 'Urban'], ['Income'])", min_len=2, max_len=2)


def two_tables(columns: Any, argument: str) -> tuple[list[str], list[str]]:
    """``columns`` (:data:`TWO_TABLES`, a table's one column named alone) as two lists,
    checked; ``argument`` names them in the error."""
    parts = ([[p] if isinstance(p, str) else p for p in columns]
             if isinstance(columns, (list, tuple)) else columns)
    a, b = check_value(parts, TWO_TABLES, argument)
    return list(a), list(b)
