"""What the disclosure measures leave out: :class:`ExclusionSpec` (synthpop's ``disclosure()``
options); the settings of :func:`~bayes_risk.disclosure.sdcmicro.sdcmicro`'s remedies
(:class:`SdcMicroSpec`); the groups and parsers of the options that
:func:`~bayes_risk.disclosure.original_risk`, :func:`~bayes_risk.disclosure.disclosure_measures`
and :func:`~bayes_risk.disclosure.sdc.sdc` declare on their parameters.

Imports only the standard library at module level: ``bayes-risk disclosure`` declares its
options from the fields (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bayes_risk._constraints import (
    Flag,
    InstanceOf,
    Interval,
    Options,
    SequenceOf,
    check_fields,
    check_value,
    checked,
)
from bayes_risk._specs import cli_option, parse_key_value
from bayes_risk.exceptions import ValidationError

__all__ = ["ExclusionSpec", "SdcMicroSpec", "CONVENTIONS", "SDCMICRO_CONVENTIONS",
           "SDCMICRO_REMEDIES", "parse_bounds", "parse_excluded"]

#: the argument group of ``bayes-risk disclosure --help`` that lists synthpop's conventions
CONVENTIONS = "conventions (synthpop's disclosure() arguments)"


@dataclass(frozen=True)
class ExclusionSpec:
    """What the disclosure measures leave out (synthpop's ``disclosure()`` options).

    Parameters
    ----------
    denom_lim : int
        Key-target cells with more original records than this are counted (and excluded with
        ``exclude_ov_denom_lim``).
    exclude_ov_denom_lim : bool
        Exclude cells over ``denom_lim`` from every table (synthpop's option of that name).
    not_targetlev : iterable, optional
        Target levels (labels as in ``target_levels``, or values) excluded from the measures.
    exclude_combinations : iterable of (key, key level, target level), optional
        Key-target combinations excluded from the measures (synthpop's ``exclude.keys``,
        ``exclude.keylevs``, ``exclude.targetlevs``).
    use_target_na, use_keys_na : bool
        Whether records with a missing target / key (per key, or one value for all) count.

    Examples
    --------
    >>> ExclusionSpec(exclude_combinations=[("sex", 1, "Missing")]).exclude_combinations
    (('sex', 1, 'Missing'),)
    """

    denom_lim: int = field(default=5, metadata=cli_option(
        "--denom-lim", "key-target cells with more than N original records are counted "
        "(n_over_denom_lim) and, with --exclude-ov-denom-lim, excluded (default 5)",
        metavar="N", type=int, group=CONVENTIONS)
        | checked(Interval(int, 1)))
    exclude_ov_denom_lim: bool = field(default=False, metadata=cli_option(
        "--exclude-ov-denom-lim", "exclude key-target cells over --denom-lim from every measure",
        action="store_true", group=CONVENTIONS)
        | checked(Flag()))
    not_targetlev: Iterable[Any] | None = field(default=None, metadata=cli_option(
        "--not-targetlev", "target levels excluded from the measures", metavar="LEVEL",
        nargs="+", group=CONVENTIONS))
    exclude_combinations: Iterable[tuple[str, Any, Any]] | None = field(
        default=None, metadata=cli_option(
            "--exclude-combination", "exclude the records with this key level and target level "
            "(repeat for more combinations)", metavar=("KEY", "KEYLEVEL", "TARGETLEVEL"),
            nargs=3, action="append", group=CONVENTIONS)
        | checked([SequenceOf(SequenceOf(InstanceOf(object, "a value"), "values", min_len=3,
                                         max_len=3),
                              "(key, key level, target level) triples", min_len=0), None]))
    use_target_na: bool = field(default=True, metadata=cli_option(
        "--no-target-na", "records with a missing target do not count (default: 'Missing' is "
        "a level)", action="store_true", parse=lambda flag: not flag, group=CONVENTIONS)
        | checked(Flag()))
    use_keys_na: bool | Sequence[bool] = field(default=True, metadata=cli_option(
        "--no-keys-na", "records with a missing key do not count (default: 'Missing' is a "
        "level)", action="store_true", parse=lambda flag: not flag, group=CONVENTIONS))

    def __post_init__(self) -> None:
        check_fields(self)
        import numpy as np

        u = self.use_keys_na
        one = isinstance(u, (bool, np.bool_)) or not isinstance(u, Iterable)
        object.__setattr__(self, "use_keys_na", check_value(u, Flag(), "ExclusionSpec.use_keys_na")
                           if one else tuple(check_value(x, Flag(), "ExclusionSpec.use_keys_na")
                                             for x in u))
        levels = self.not_targetlev
        object.__setattr__(self, "not_targetlev", () if levels is None else
                           (levels,) if isinstance(levels, str) else tuple(levels))
        object.__setattr__(self, "exclude_combinations",
                           tuple(tuple(item) for item in self.exclude_combinations or ()))


#: the argument group of ``bayes-risk original-risk --help`` that lists sdcMicro's conventions
SDCMICRO_CONVENTIONS = "conventions (sdcMicro's arguments)"

def _number(text: str, option: str, col: str) -> float | None:
    """A value of ``option``'s ``col``; an empty bound of ``--bottom-top`` is ``None``."""
    if not text.strip() and option == "--bottom-top":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValidationError(f"{option} {col}: {text!r} is not a number.",
                              code="BAD_OPTION_VALUE") from None
    return int(value) if value.is_integer() else value


def parse_bounds(items: list[str]) -> dict[str, tuple[float | None, float | None]]:
    """``--bottom-top COL=BOTTOM:TOP ...`` as ``sdc``'s ``bottom_top_coding`` (``sdc`` checks
    the columns and bounds)."""
    coding = {}
    for col, bounds in parse_key_value(items, "--bottom-top", str).items():
        low, sep, high = bounds.partition(":")
        if not sep or ":" in high:
            raise ValidationError(f"--bottom-top {col}={bounds}: expected COL=BOTTOM:TOP, a side "
                                  "empty for no bound (Income=:200000).",
                                  code="BAD_OPTION_VALUE")
        coding[col] = (_number(low, "--bottom-top", col), _number(high, "--bottom-top", col))
    return coding


def parse_excluded(items: list[str]) -> dict[str, list[float | None]]:
    """``--exclude COL=V,V ...`` as ``sdc``'s ``recode_exclude``."""
    return {col: [_number(v, "--exclude", col) for v in values.split(",")]
            for col, values in parse_key_value(items, "--exclude", str).items()}


#: the argument group of ``bayes-risk remedy --help`` that lists sdcMicro's remedies
SDCMICRO_REMEDIES = "sdcMicro's remedies (Templ, Kowarik & Meindl 2015)"

@dataclass(frozen=True)
class SdcMicroSpec:
    """The settings of sdcMicro's remedies (:func:`~bayes_risk.disclosure.sdcmicro.sdcmicro`'s
    ``settings=``), each at sdcMicro's default; a setting applies to its remedy only.

    Parameters
    ----------
    pram_pd, pram_alpha : float
        PRAM's ``pd`` (least diagonal entry of the transition matrix before the invariant
        step, default 0.8) and ``alpha`` (amount of perturbation, default 0.5), both in [0, 1]:
        each diagonal entry is drawn uniformly in ``[pram_pd, 1]``, the matrix then mixed with
        the identity by ``pram_alpha``.
    k : int
        The k of local suppression (default 2).
    importance : sequence of int, optional
        One number per key of local suppression, 1 to the number of keys: keys of smaller
        numbers are suppressed last (default: fewer levels, more important, as sdcMicro).
    aggr : int
        Least group size of MDAV microaggregation (default 3): groups of ``aggr`` records, the
        last of up to ``2 aggr - 1``.
    noise : float
        ``"additive"``: the noise's standard deviation in percent of the column's;
        ``"correlated"``: the noise's covariance in percent of the columns' (default 150).
    noise_method : {"additive", "correlated"}
        Independent normal noise per column, or multivariate normal noise with the columns'
        covariance (Kim 1986; two columns or more).

    Examples
    --------
    >>> SdcMicroSpec(k=3).aggr
    3
    """

    pram_pd: float = field(default=0.8, metadata=cli_option(
        "--pram-pd", "least diagonal entry of PRAM's matrix before its invariant step "
        "(sdcMicro's pd, default 0.8)", type=float, metavar="P", group=SDCMICRO_REMEDIES)
        | checked(Interval(float, 0, 1)))
    pram_alpha: float = field(default=0.5, metadata=cli_option(
        "--pram-alpha", "amount of PRAM's perturbation, 0 none to 1 all (sdcMicro's alpha, "
        "default 0.5)", type=float, metavar="A", group=SDCMICRO_REMEDIES)
        | checked(Interval(float, 0, 1)))
    k: int = field(default=2, metadata=cli_option(
        "--k", "k of --local-suppression (default 2, sdcMicro's)", type=int, metavar="K",
        group=SDCMICRO_REMEDIES) | checked(Interval(int, 2)))
    importance: Sequence[int] | None = field(default=None, metadata=cli_option(
        "--importance", "one number per key of --local-suppression, 1 (suppressed last) to the "
        "number of keys (default: keys with fewer levels are suppressed last)", nargs="+",
        type=int, metavar="N", group=SDCMICRO_REMEDIES))
    aggr: int = field(default=3, metadata=cli_option(
        "--aggr", "least group size of --microaggregation (default 3, sdcMicro's)", type=int,
        metavar="K", group=SDCMICRO_REMEDIES) | checked(Interval(int, 2)))
    noise: float = field(default=150.0, metadata=cli_option(
        "--noise", "the noise's standard deviation (additive) or covariance (correlated) in "
        "percent of the column's (default 150, sdcMicro's)", type=float, metavar="PCT",
        group=SDCMICRO_REMEDIES) | checked(Interval(float, 0, closed="neither")))
    noise_method: Literal["additive", "correlated"] = field(default="additive", metadata=cli_option(
        "--noise-method", "additive: independent noise per column (default); correlated: "
        "noise with the columns' covariance (two columns or more)",
        choices=("additive", "correlated"), group=SDCMICRO_REMEDIES)
        | checked(Options(("additive", "correlated"), listed=True)))

    __post_init__ = check_fields  # the fields' table is the whole check


