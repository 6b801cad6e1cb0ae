"""How a design searches its space: :class:`SearchSpec` (public as
``bayes_risk.SearchSpec`` and ``bayes_risk.designing.SearchSpec``), with the options of
``bayes-risk design`` that set its fields.

Imports only the standard library at module level: ``bayes-risk design`` declares its search
options from the fields (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bayes_risk._constraints import Interval, Options, check_fields, checked
from bayes_risk._specs import cli_option
from bayes_risk.exceptions import ValidationError

__all__ = ["SearchSpec", "OBJECTIVES", "SEARCH"]

#: the argument group of ``bayes-risk design --help`` that lists the search's options
SEARCH = "the search"


def _screen_records(text: str) -> int | None:
    """``--screen-records``: a number of records, or ``none`` (no subsample screen)."""
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"--screen-records {text!r}: expected a number of records or "
                              "none.", code="BAD_OPTION_VALUE") from None


#: the utility lines a design can maximise: threshold name -> direction of "better"
OBJECTIVES: dict[str, str] = {"overlap": "max", "s_pmse": "min"}


@dataclass(frozen=True)
class SearchSpec:
    """What a design's search optimises and how long it runs: its objective, its stops, its
    subsample screen and its fresh-seed re-audits (:func:`~bayes_risk.design`'s ``search=``).

    Parameters
    ----------
    objective : {"overlap", "s_pmse"}
        The utility line to optimise: the mean interval overlap (maximised, default) or the
        mean S_pMSE (minimised).
    max_candidates : int
        Most candidates audited. A space of at most this many is enumerated in full; a larger
        one is searched by Optuna's TPE sampler with the verdict lines as constraints.
    patience : int, optional
        Stop once this many candidates in a row have not improved the best release that
        passes (default: no such stop).
    screen_records : int or None
        Records of the subsample screen (``None``: no subsample; also skipped for fewer than
        twice as many records).
    confirm : int or None
        Most candidates re-audited with fresh seeds, best first, until one passes (``None``:
        every one that passes).
    cpu_budget : float, optional
        CPU seconds of the search (this process's, every thread): the candidate running when
        they are spent is stopped and not counted, and a ``resume`` audits it again (the
        fresh-seed re-audit comes after the search, outside the budget). Off the main
        thread and on Windows, where no CPU timer can interrupt it, the candidate running
        finishes first.

    Examples
    --------
    >>> SearchSpec(max_candidates=8, patience=3).confirm
    3
    """

    objective: str = field(default="overlap", metadata=cli_option(
        "--objective", "the utility line maximised (overlap) or minimised (s_pmse) among the "
        "releases that pass (default overlap)", choices=tuple(OBJECTIVES), dashes=False,
        group=SEARCH) | checked(Options(OBJECTIVES)))
    max_candidates: int = field(default=24, metadata=cli_option(
        "--max-candidates", "most candidates audited (default 24)", type=int, metavar="N",
        group=SEARCH) | checked(Interval(int, 1)))
    patience: int | None = field(default=None, metadata=cli_option(
        "--patience", "stop after N candidates in a row without a better release that passes",
        type=int, metavar="N", group=SEARCH) | checked([Interval(int, 1), None]))
    screen_records: int | None = field(default=300, metadata=cli_option(
        "--screen-records", "records of the subsample screen of the model-based steps (default "
        "300; none: every record at once)", parse=_screen_records, metavar="N|none",
        group=SEARCH) | checked([Interval(int, 10), None]))
    confirm: int | None = field(default=3, metadata=cli_option(
        "--confirm", "most candidates re-audited with fresh seeds, best first, until one passes "
        "(default 3)", type=int, metavar="N", group=SEARCH) | checked([Interval(int, 1), None]))
    cpu_budget: float | None = field(default=None, metadata=cli_option(
        "--cpu-budget", "CPU seconds of the search: no candidate starts once the next would "
        "pass it", type=float, metavar="SECONDS", group=SEARCH) | checked(
        [Interval(float, 0, closed="neither"), None]))

    def __post_init__(self) -> None:
        check_fields(self)
