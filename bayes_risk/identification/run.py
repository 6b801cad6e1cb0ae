"""An identification run assembled once, for the command line and the audit: the run, the
radius search and the figures at its maximising radii, the radius sweep and the knowledge sweep
(``identification_run``), and the tables and figures they give (``IdentificationRun.files``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Annotated, Any

import pandas as pd

from bayes_risk._constraints import OneOf, Requires, check_relations
from bayes_risk._lattice import check_max_size
from bayes_risk._specs import cli_option
from bayes_risk.exceptions import arg_name
from bayes_risk.identification.api import identification_risk, identification_risk_of_inputs
from bayes_risk.identification.radius import radius_search, radius_sweep
from bayes_risk.identification.radius_refine import REFINE_POINTS
from bayes_risk.identification.specs import KNOWLEDGE, search_radii, sweep_radii
from bayes_risk.results.knowledge import SWEEP_TABLES

__all__ = ["IdentificationRun", "identification_run", "run_known_sweep", "LARGE_TABLES"]

#: the tables of ``IdentificationRun.files`` that grow with the targets or the subsets: written
#: with pyarrow (``bayes_risk.data.io.write_csv``), the others by pandas
LARGE_TABLES = frozenset({"records.csv", *SWEEP_TABLES})

#: the run's arguments against each other (``selection``: the population's; ``aggregation``:
#: the one the run resolves to), checked before any work
_RELATIONS = (
    OneOf(("selection", "known_sweep"), why="the sweep does not condition on the selection: a "
          "subset of the known columns may not tell the intruder whether a target was selected"),
    Requires("refine", "search", code="OPTION_REQUIRED", why="it refines that search"),
    Requires("max_size", "known_sweep", code="OPTION_REQUIRED"),
    Requires("records", "aggregation", when=("per-dataset",), equal=("per_dataset",),
             why="pooled probabilities give one row per target"),
)


@dataclass
class IdentificationRun:
    """What ``identification_run`` computed.

    Attributes
    ----------
    result : IdentificationResult
        The run at the match spec's radius (at ``radius_star`` when it gave none and the
        search ran first).
    search : RadiusSweepResult or None
        The radius search (the worst case over the radii).
    radius_star : dict or None
        The radius of each searched column that maximises the expected match risk.
    at_r_star : IdentificationResult or None
        The figures at ``radius_star`` (``worst_case=True``; ``result`` itself when the radii
        agree).
    sweep : RadiusSweepResult or None
        The radius sweep, every dataset evaluated separately.
    known_sweep : KnowledgeSweepResult or None
        The knowledge sweep at the run's radius.
    records : {"per-target", "per-dataset", "none"}
        ``records.csv`` of :meth:`files` (of ``headline``): one row per target, one per target
        and dataset, or none.
    unused_rule : bool
        The release's manifest records why records were selected for synthesis and the run
        did not condition on it (no ``selection``).
    """

    result: Any
    search: Any = None
    radius_star: dict[str, float] | None = None
    at_r_star: Any = None
    sweep: Any = None
    known_sweep: Any = None
    records: str = "per-target"
    unused_rule: bool = False

    @property
    def headline(self) -> Any:
        """The result a verdict reads: at the maximising radii when they were run."""
        return self.at_r_star if self.at_r_star is not None else self.result

    def text_lines(self) -> list[str]:
        """The run in lines of words (``bayes-risk identification`` prints them): the result's
        headline, then those of the radius search and sweep and the knowledge sweep's line
        (those computed), and the selection rule the run left unused."""
        return [*self.result.headline().splitlines(),
                *(p.headline() for p in (self.search, self.sweep) if p is not None),
                *(p.text_line() for p in (self.known_sweep,) if p is not None),
                *(["the release's manifest records why records were selected for synthesis: "
                   f"{arg_name('selection', repr('release'), cli='release')} gives the risk "
                   "for the intruder who knows it"] if self.unused_rule else [])]

    def to_dict(self) -> dict[str, Any]:
        """The result's ``to_dict()`` with ``settings["records_output"]`` and the radius sweep,
        the radius search and the knowledge sweep (those computed)."""
        out = self.result.to_dict()
        out["settings"]["records_output"] = self.records
        for name, part in (("radius_sweep", self.sweep), ("radius_search", self.search),
                           ("known_sweep", self.known_sweep)):
            if part is not None:
                out[name] = part.to_dict()
        return out

    def files(self) -> tuple[dict[str, pd.DataFrame], dict[str, tuple[Any, str]]]:
        """The run's tables (file name -> DataFrame) and figures (file name -> (result, plot
        kind)), the names of ``bayes-risk identification``'s files.

        Returns
        -------
        tuple of dict
            ``records.csv``, ``radius_sweep.csv``, ``radius_search.csv``, ``known_sweep.csv``,
            ``known_sweep_drivers.csv``, ``known_sweep_levels.csv`` (those computed), and the
            figures ``running_estimate.png`` (posterior replicates), ``radius_sweep.png``,
            ``radius_search.png``, ``known_sweep.png``, ``known_sweep_drivers.png``.
        """
        tables: dict[str, pd.DataFrame] = {}
        figures: dict[str, tuple[Any, str]] = {}
        res = self.headline
        if self.records != "none":
            tables["records.csv"] = res.records if self.records == "per-dataset" \
                else res.target_table()
        if res.file.get("mc_trace"):  # drawn from posterior replicates
            figures["running_estimate.png"] = (res, "running_estimate")
        for part, name, kind in ((self.sweep, "radius_sweep", "box"),
                                 (self.search, "radius_search", "profile")):
            if part is not None:
                tables[f"{name}.csv"], figures[f"{name}.png"] = part.to_frame(), (part, kind)
        if self.known_sweep is not None:
            more_tables, more_figures = self.known_sweep.files()
            tables.update(more_tables)
            figures.update(more_figures)
        return tables, figures


#: a run's context: given the part (``"run"``, ``"search"``, ``"worst case"``) and the radii
#: it matches at, a context the engine runs in (the audit names the run in its warnings)
Label = Callable[[str, Any], AbstractContextManager[Any]]


def _plain(part: str, radius: Any) -> AbstractContextManager[Any]:
    return nullcontext()


def identification_run(
    inputs: list[Any],
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    sweep: Annotated[Sequence[float] | None, cli_option(
        "--radius-sweep", "also compute the risk over these common radii (per dataset) and the "
        "maximising radius (Hornby & Hu 2021 §4.1)", metavar="R1,R2,...",
        parse=sweep_radii)] = None,
    search: Annotated[Sequence[float] | None, cli_option(
        "--radius-search", "the worst case over the intruder's radii, as the audit's verdict reads "
        "it: every numeric known column searched over these radii (default "
        "0.01,0.025,0.05,0.1,0.2,0.3,0.5,1), 0 (exact) added, with the run's --aggregation; the "
        "run's figures are at the radii of the largest expected match risk unless --radius is "
        "given; writes DIR/radius_search.csv and DIR/radius_search.png", metavar="R1,R2,...",
        nargs="?", const="default", parse=search_radii)] = None,
    refine: Annotated[int | None, cli_option(
        "--radius-refine", "with --radius-search: points evaluated at most between the grid's "
        "radii to find and bound the worst case over every radius (default 200; 0: the grid's "
        "points only, bounded between them)", type=int, metavar="N")] = None,
    worst_case: bool = False,
    known_sweep: Annotated[Sequence[str] | None, cli_option(
        "--known-sweep", "also compute the risk for every subset of these candidate known columns "
        "(up to --max-size, a greedy path beyond), the Pareto frontier of risk against the number "
        "of columns known, Shapley values and per-level contributions; a candidate listed in "
        "--known-synthesized is synthesized, one in --known-unsynthesized is not, any other is "
        "synthesized when its released values differ from the original's", nargs="+",
        metavar="COL", group=KNOWLEDGE)] = None,
    max_size: Annotated[int | None, cli_option(
        "--max-size", "largest subset size evaluated exhaustively by --known-sweep (default: every "
        "size)", type=int, metavar="K", group=KNOWLEDGE)] = None,
    label: Label = _plain,
    records: Annotated[str, cli_option(
        "--records-output", "records.csv with one row per target (default; per-dataset "
        "aggregation: the record-level IR and counts over datasets), one row per target and "
        "dataset (--aggregation per-dataset only), or no records.csv",
        choices=("per-target", "per-dataset", "none"))] = "per-target",
    **kwargs: Any,
) -> IdentificationRun:
    """Identification risk with the radius search, the radius sweep and the knowledge sweep
    the caller asks for, each with the run's options.

    Parameters
    ----------
    inputs : list
        ``[original, synthetic]``, emptied once nothing below reads them, as
        ``identification_risk_of_inputs`` does (a caller holding no other reference has them
        freed before the matching).
    known, synthesized
        As in ``identification_risk``.
    search : sequence of float, optional
        The radii of ``radius_search`` (the worst case over the radii of every numeric known
        column); ``refine`` its refinement (default ``REFINE_POINTS``, 200). Without
        ``worst_case`` the search runs first and, when ``match`` gives no radius, the run is at
        its maximising radii.
    worst_case : bool
        The run at ``match``'s radius first, then the search and the figures at its
        maximising radii beside it (``at_r_star``; the audit reads both).
    sweep : sequence of float, optional
        The radii of ``radius_sweep``, every dataset evaluated separately (Hornby & Hu 2021,
        Fig. 6).
    known_sweep : sequence of str, optional
        The candidates of ``known_sweep`` (``run_known_sweep``); ``max_size`` its
        largest subset evaluated exhaustively.
    label : callable
        ``label(part, radius)``: the context each engine run is made in.
    records : {"per-target", "per-dataset", "none"}
        ``IdentificationRun.records``.
    **kwargs
        The run's other arguments of ``identification_risk`` (``schema``, ``match``,
        ``population``, ``aggregation``, ``replicates``, ``progressbar``, ``executor``). The
        search and the sweeps take them without ``replicates`` (they match on the released
        datasets) and with ``"pooled"`` for ``"pooled_measures"`` (they keep the measures
        only anyway). ``population.selection`` (what the intruder knows of why records were
        selected for synthesis, as in ``identification_risk``) makes every part of the run
        for that intruder; a release that records sampling with synthesis is resolved to its
        census's units here too, once for every part (``identification_risk`` resolves both
        for its own call only).

    Returns
    -------
    IdentificationRun

    Raises
    ------
    ValidationError
        Arguments that do not go together (:data:`_RELATIONS`), before any work: a
        ``known_sweep`` beside ``population.selection``, ``refine`` without ``search``,
        ``max_size`` without ``known_sweep`` (or above its columns), ``records="per-dataset"``
        without per-dataset aggregation.
    """
    from bayes_risk._memory import release_free_memory
    from bayes_risk.identification.sampled import sampled_inputs
    from bayes_risk.identification.selection import conditioned, release_rule

    selection = getattr(kwargs.get("population"), "selection", None)
    compat = getattr(kwargs.get("match"), "compat", None)  # the aggregation the run resolves to
    aggregation = str(kwargs.get("aggregation") or ("per_dataset" if compat else "pooled"))
    # "pooled_measures" is the command's pooled run without probabilities: named as "pooled",
    # the value its user gave or left as the default
    aggregation = {"pooled_measures": "pooled"}.get(aggregation.replace("-", "_"), aggregation)
    check_relations(dict(selection=selection, known_sweep=known_sweep, refine=refine,
                         search=search, max_size=max_size, records=records,
                         aggregation=aggregation.replace("-", "_")), _RELATIONS)
    if known_sweep is not None:
        check_max_size(max_size, known_sweep, "known_sweep")
    refine = REFINE_POINTS if refine is None else refine
    original, synthetic = inputs
    if selection is not None:  # conditioned on here, once: the parts take the spec without it
        kwargs["population"] = dataclasses.replace(kwargs["population"], selection=None)
    run = IdentificationRun(None, records=records,
                            unused_rule=selection is None and release_rule(synthetic) is not None)
    given = sampled = None
    if selection is not None:  # every part for the intruder who knows R
        given = conditioned(original, synthetic, selection, known=known, synthesized=synthesized,
                            schema=kwargs.get("schema"), match=kwargs["match"],
                            population=kwargs.get("population"),
                            replicates=kwargs.get("replicates"))
        original, synthetic, known, synthesized = (given.original, given.synthetic, given.known,
                                                   given.synthesized)
        kwargs.update(schema=given.schema, population=given.population)
    if kwargs.get("replicates") is None:  # a sample of a census: every census unit a target
        sampled = sampled_inputs(original, synthetic, known=known, synthesized=synthesized,
                                 population=kwargs.get("population"))
    if sampled is not None:
        original, synthetic = sampled.original, sampled.synthetic
        synthesized = sampled.synthesized if sampled.synthesized is not None else synthesized
        kwargs["population"] = sampled.population
    inputs[:] = [original, synthetic]
    del original, synthetic  # held by ``inputs`` alone: freed with it
    release_free_memory()  # the readers' buffers
    _part(run, inputs, known=known, synthesized=synthesized,
          search=search, refine=refine, worst_case=worst_case, sweep=sweep,
          known_sweep=known_sweep, max_size=max_size, label=label,
          **kwargs)
    for note in (given, sampled):
        if note is not None:
            note.annotate(run.result)
            if run.at_r_star is not None and run.at_r_star is not run.result:
                note.annotate(run.at_r_star)
    release_free_memory()  # the inputs, the matching engine's indexes and buffers
    return run


def _part(run: IdentificationRun, inputs: list[Any], *,
          known: Sequence[str], synthesized: Sequence[str] | None,
          search: Sequence[float] | None, refine: int, worst_case: bool,
          sweep: Sequence[float] | None, known_sweep: Sequence[str] | None,
          max_size: int | None, label: Label, **kwargs: Any) -> None:
    """The parts of :func:`identification_run` on its resolved inputs, into ``run``."""
    original, synthetic = inputs
    match = kwargs["match"]
    # the search and the sweeps match on the released datasets: replicates are the run's alone
    swept = {k: v for k, v in kwargs.items() if k != "replicates"}
    if swept.get("aggregation") == "pooled_measures":  # they keep the measures only anyway
        swept["aggregation"] = "pooled"
    if search is not None and not worst_case:
        run.search, run.radius_star = _search(original, synthetic, known, synthesized, search,
                                              refine, label, swept)
        if match.radius is None:  # the run's figures at the worst case
            match = kwargs["match"] = swept["match"] = match.replace(radius=run.radius_star)
    last = sweep is None and known_sweep is None and not (
        worst_case and search is not None)
    with label("run", match.radius):
        if last:
            del original, synthetic
            run.result = identification_risk_of_inputs(inputs, known=known,
                                                       synthesized=synthesized, **kwargs)
            return
        run.result = identification_risk(original, synthetic, known=known,
                                         synthesized=synthesized, **kwargs)
    if search is not None and worst_case:
        run.search, run.radius_star = _search(original, synthetic, known, synthesized, search,
                                              refine, label, swept)
        with label("worst case", run.radius_star):
            run.at_r_star = run.result if run.radius_star == (match.radius or {}) else \
                identification_risk(original, synthetic, known=known, synthesized=synthesized,
                                    **{**kwargs, "match": match.replace(radius=run.radius_star),
                                       "progressbar": False})
    if sweep is not None:
        run.sweep = radius_sweep(original, synthetic, known=known, synthesized=synthesized,
                                 radii=sweep, **{**swept, "aggregation": "per_dataset"})
    if known_sweep is not None:
        run.known_sweep = run_known_sweep(original, synthetic, candidates=known_sweep,
                                          known=known, synthesized=synthesized,
                                          max_size=max_size, **swept)


def _search(original: Any, synthetic: Any, known: Sequence[str],
            synthesized: Sequence[str] | None, radii: Sequence[float], refine: int,
            label: Label, kwargs: dict[str, Any]) -> tuple[Any, dict[str, float]]:
    """The radius search with the run's options, its radius unset; the maximising radii."""
    with label("search", None):
        found = radius_search(original, synthetic, known=known, synthesized=synthesized,
                              radii=radii, refine=refine,
                              **{**kwargs, "match": kwargs["match"].replace(radius=None)})
    return found, dict(zip(found.columns, (float(r) for r in found.r_star), strict=True))


def run_known_sweep(
    original: Any,
    synthetic: Any,
    *,
    candidates: Sequence[str],
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    max_size: int | None = None,
    **kwargs: Any,
) -> Any:
    """The knowledge sweep of ``candidates`` with a run's options.

    Parameters
    ----------
    original, synthetic
        As in ``known_sweep``.
    candidates : sequence of str
        The candidate known columns.
    known, synthesized : sequence of str
        The run's known and synthesized columns: candidates among them keep their role,
        otherwise (a candidate the run does not know) the release says which were synthesized.
    max_size : int, optional
        ``LatticeSpec.max_size`` of ``known_sweep``.
    **kwargs
        The run's arguments of ``identification_risk``; a radius per column is kept for the
        candidates only.

    Returns
    -------
    KnowledgeSweepResult
    """
    from bayes_risk._lattice import LatticeSpec
    from bayes_risk.identification.knowledge import known_sweep  # its modules: on first use

    cands = list(candidates)
    roles = ([c for c in cands if c in set(synthesized or ())]
             if set(cands) <= set(known) else None)
    match = kwargs["match"]
    if isinstance(match.radius, dict):  # the radii of the candidates only
        kwargs["match"] = match.replace(
            radius={c: r for c, r in match.radius.items() if c in cands} or None)
    return known_sweep(original, synthetic, candidates=cands, synthesized=roles,
                        lattice=LatticeSpec(max_size=max_size), **kwargs)
