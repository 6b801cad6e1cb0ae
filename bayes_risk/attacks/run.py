"""Anonymeter's three attacks run together on one release, as ``bayes-risk attacks`` and the
audit's attacks step run them (:func:`attacks_run`): which attacks run, their shared arguments,
and the run's lines and files (:class:`AttacksRun`)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import pandas as pd

from bayes_risk._constraints import Requires, check_relations
from bayes_risk._specs import cli_option
from bayes_risk.attacks.inference import inference_risk
from bayes_risk.attacks.linkability import linkability_risk
from bayes_risk.attacks.singling_out import singling_out_risk
from bayes_risk.exceptions import COMMAND_LINE_OPTIONS
from bayes_risk.results.attacks import InferenceResult, LinkabilityResult, SinglingOutResult

__all__ = ["AttacksRun", "attacks_run"]

#: the inference's arguments against each other
_RELATIONS = (Requires("aux_columns", "secret", code="OPTION_REQUIRED",
                       why="the inference intruder's knowledge"),)


@dataclass(frozen=True)
class AttacksRun:
    """The attacks of one :func:`attacks_run` (``None``: not run).

    Attributes
    ----------
    singling_out, linkability, inference : result or None
    holdout_size : int or None
        Records of the holdout (``None``: no holdout, the risk is the main attack's success).
    """

    singling_out: SinglingOutResult | None
    linkability: LinkabilityResult | None
    inference: InferenceResult | None
    holdout_size: int | None

    def _parts(self) -> list[tuple[str, Any]]:
        return [("singling_out", self.singling_out), ("linkability", self.linkability),
                ("inference", self.inference)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: each attack's ``to_dict()`` (``None`` when not run) and the warning codes
        of all."""
        done = [r for _, r in self._parts() if r is not None]
        return {"measure": "attacks", **{k: None if r is None else r.to_dict()
                                         for k, r in self._parts()},
                "warnings": list(dict.fromkeys(w for r in done for w in r.warnings))}

    def headline(self) -> str:
        """What was attacked, then each attack's ``headline_text()``, one a line."""
        done = [r for _, r in self._parts() if r is not None]
        m = len(done[0].table["dataset"].unique())
        against = ("no holdout (the risk is the main attack's success rate)"
                   if self.holdout_size is None else f"a holdout of {self.holdout_size:,} records")
        return "\n".join([f"anonymeter's attacks on {m} synthetic dataset(s) against {against}; "
                          "risk [interval], the largest over the datasets",
                          *(r.headline_text() for r in done)])

    def files(self) -> tuple[dict[str, pd.DataFrame], dict[str, tuple[Any, str]]]:
        """The tables (file name -> DataFrame) and figures (file name -> (result, kind)) of the
        attacks run: each one's table, its rows (singling out: the predicates; the others: the
        attacked records), its groups (``groups=``) and its risk figure."""
        tables: dict[str, pd.DataFrame] = {}
        figures: dict[str, tuple[Any, str]] = {}
        for name, r in self._parts():
            if r is None:
                continue
            rows = "queries" if name == "singling_out" else "records"
            tables[f"{name}.csv"] = r.table
            tables[f"{name}_{rows}.csv"] = getattr(r, rows)
            figures[f"{name}.png"] = (r, "risk")
            if getattr(r, "by_group", None) is not None:
                tables[f"{name}_groups.csv"] = r.by_group
        return tables, figures


def attacks_run(original: pd.DataFrame, synthetic: Any, *, holdout: pd.DataFrame | None = None,
                schema: Any = None, random_seed: Any = None,
                singling_out: Mapping[str, Any] | None = None,
                linkability: Mapping[str, Any] | None = None,
                inference: Mapping[str, Any] | None = None,
                n_attacks: Annotated[int | None, cli_option(
                    "--n-attacks", "predicates per dataset and mode, and records attacked in "
                    "each of ORIGINAL and --holdout (default 500, anonymeter's; linkability and "
                    "inference use at most the records of each table)", type=int,
                    metavar="N")] = None,
                confidence_level: Annotated[float | None, cli_option(
                    "--confidence-level", "level of the intervals (default 0.95)", type=float,
                    metavar="P")] = None,
                groups: Annotated[str | None, cli_option(
                    "--groups", "a categorical column: the risk of each group of attempts with "
                    "one of its levels too, for every attack run (anonymeter's "
                    "risk_for_groups, which groups inference by the secret: give the secret's "
                    "name); inference and linkability: the attacked records of the level; "
                    "singling out: the predicates written on a synthetic row of the level; "
                    "singling_out_groups.csv, linkability_groups.csv, inference_groups.csv",
                    metavar="COL")] = None) -> AttacksRun:
    """Run anonymeter's attacks on a release, each with the same holdout, schema, seed,
    ``n_attacks``, ``confidence_level`` and ``groups``.

    Parameters
    ----------
    original, synthetic, holdout, schema, random_seed
        As :func:`~bayes_risk.attacks.singling_out_risk` takes them.
    singling_out : mapping, optional
        Arguments of :func:`~bayes_risk.attacks.singling_out_risk` (``mode``, ``predicates``);
        an empty ``mode`` runs no singling out (default: both modes).
    linkability : mapping, optional
        Arguments of :func:`~bayes_risk.attacks.linkability_risk`; run when it holds
        ``aux_columns``. Its ``n_attacks`` is at most the records of the original and holdout.
    inference : mapping, optional
        Arguments of :func:`~bayes_risk.attacks.inference_risk` (``secret``, ``guess``, ...);
        run when it holds ``secret``.
    n_attacks, confidence_level, groups : optional
        Arguments of every attack (``None``: the attacks' defaults).

    Returns
    -------
    AttacksRun

    Raises
    ------
    ValidationError
        ``inference`` holding ``aux_columns`` without ``secret`` (``OPTION_REQUIRED``).
    """
    singling_out, linkability, inference = (dict(a or {}) for a in (singling_out, linkability,
                                                                      inference))
    common = dict(n_attacks=n_attacks, confidence_level=confidence_level, groups=groups)
    shared = dict(holdout=holdout, schema=schema, random_seed=random_seed,
                  **{k: v for k, v in common.items() if v is not None})
    check_relations(inference, _RELATIONS)
    so = lk = inf = None
    # inference first: the cheapest attack, so that a bad secret stops the run at once
    if "secret" in inference:
        inf = inference_risk(original, synthetic, **inference, **shared)
    if singling_out.get("mode", True):
        so = singling_out_risk(original, synthetic, **singling_out, **shared)
    if "aux_columns" in linkability:
        sizes = [len(original)] + ([] if holdout is None else [len(holdout)])
        n = shared.pop("n_attacks", inspect.signature(linkability_risk).parameters[
            "n_attacks"].default)
        n = n if n < 1 else min(n, *sizes)
        # on the command line, linkability's aux_columns are its own option (the inference's
        # is another)
        opts = COMMAND_LINE_OPTIONS.get()
        token = None if opts is None or "linkability" not in opts else COMMAND_LINE_OPTIONS.set(
            {**opts, "aux_columns": opts["linkability"]})
        try:
            lk = linkability_risk(original, synthetic, **linkability, n_attacks=n, **shared)
        finally:
            if token is not None:
                COMMAND_LINE_OPTIONS.reset(token)
    return AttacksRun(so, lk, inf, None if holdout is None else len(holdout))
