"""The audit's steps: each calls one measure's public function and writes its files into its
own sub-folder, returning a :class:`~bayes_risk.auditing.StepOutcome`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import write_json
from bayes_risk.auditing.attacks_step import attacks_step
from bayes_risk.auditing.context import (
    StepContext,
    add_run_warnings,
    named_run,
    ran,
    rebuilt_synthesizer,
    release_independent,
    rows_aligned,
    skipped,
    step_folder,
    write_table,
)
from bayes_risk.auditing.disclosure_step import disclosure_step
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import radius_text
from bayes_risk.exceptions import arg_name
from bayes_risk.results._base import plot_figure

__all__ = [
    "StepContext",
    "utility_step",
    "identification_step",
    "posterior_identification_step",
    "attribute_step",
    "membership_step",
    "attacks_step",
    "disclosure_step",
    "add_run_warnings",
    "rebuilt_has_posterior",
    "rebuilt_synthesizer",
    "EXECUTOR_STEPS",
]

#: the steps whose engines run their partitions on the audit's executor (``audit(executor=)``),
#: and what of each runs there; every other step, and the rest of these, run in process
EXECUTOR_STEPS = {
    "identification": "the matching of every run (one dataset at a time, pooled, the radius "
                      "searches, the knowledge sweep); the drivers of the risk in process",
    "posterior_identification": "the batches of posterior replicates, each drawn and matched "
                                "in one task",
    "attribute": "the records' posteriors, also of the knowledge sweep; refits of a fitted "
                 "model and the known-records curve in process",
}


def utility_step(ctx: StepContext) -> StepOutcome:
    """pMSE (null by partial / complete synthesis), interval overlap, per-variable marginals."""
    from bayes_risk.utility.summary import OverlapSpec, utility_summary

    plan = ctx.plan
    res = utility_summary(
        ctx.original, ctx.synthetic, schema=ctx.schema, synthesized=plan.synthesized,
        random_seed=plan.random_seed, progressbar=ctx.progressbar,
        overlap=OverlapSpec(rules=plan.given.combining_rules), propensity=plan.given.propensity,
        imputed=plan.given.imputed,
    )
    # the tables too compare imputed columns on the original's observed cells
    from bayes_risk.utility._inputs import ImputedChoice, observed_cells

    imputed = list(res.settings.get("imputed_columns") or [])
    datasets = list(ctx.synthetic)
    aligned = all(len(z) == len(ctx.original) for z in datasets)
    choice = ImputedChoice(imputed, str(res.settings.get("imputed_columns_source")), aligned)
    _, datasets = observed_cells(ctx.original, datasets, choice, for_pmse=False)
    marg = marginals(ctx.original, datasets, ctx.schema, observed=imputed)
    tw = twoway(ctx.original, datasets, ctx.schema, plan.synthesized)
    files: list[str] = []
    folder = step_folder(ctx, "utility")
    if folder is not None:
        write_json(folder / "summary.json", res.to_dict())
        write_table(ctx, res.overlap, folder / "overlap.csv")
        write_table(ctx, marg, folder / "marginals.csv")
        write_table(ctx, tw, folder / "twoway.csv")
        files = ["summary.json", "overlap.csv", "marginals.csv", "twoway.csv"]
    from bayes_risk.auditing.causes import marginal_discrepancy

    cats = [c for c in plan.synthesized if ctx.schema[c].is_categorical]
    drivers = marginal_discrepancy(ctx.original, datasets, plan.synthesized, cats)
    return ran("utility", res, folder, files, marginals=marg, twoway=tw, drivers=drivers)


def twoway(original: pd.DataFrame, synthetic: Any, schema: Any, synthesized: list[str],
           max_pairs: int = 3) -> pd.DataFrame:
    """Two-way tables (% of records) of up to ``max_pairs`` categorical pairs with a synthesized
    member, original against pooled release (synthpop ``compare()``)."""
    cats = schema.categorical
    pairs = [(a, b) for a in synthesized if a in cats for b in cats if b != a]
    pairs = list(dict.fromkeys(tuple(p) for p in pairs))[:max_pairs]
    pooled = pd.concat(list(synthetic), ignore_index=True)
    frames = []
    for a, b in pairs:
        po = pd.crosstab(original[a], original[b], normalize=True) * 100
        ps = pd.crosstab(pooled[a], pooled[b], normalize=True) * 100
        po, ps = po.align(ps, fill_value=0.0)
        t = pd.DataFrame({"original": po.stack(), "synthetic": ps.stack()}).reset_index()
        t.columns = ["level_1", "level_2", "original", "synthetic"]
        t.insert(0, "variable_2", b)
        t.insert(0, "variable_1", a)
        t["difference"] = t["synthetic"] - t["original"]
        frames.append(t)
    cols = ["variable_1", "variable_2", "level_1", "level_2", "original", "synthetic",
            "difference"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)[cols]
    out[["level_1", "level_2"]] = out[["level_1", "level_2"]].astype(str)
    return out


def marginals(original: pd.DataFrame, synthetic: Any, schema: Any,
              observed: Sequence[str] = ()) -> pd.DataFrame:
    """Per-variable comparison, original against pooled release (synthpop ``compare()``):
    ``kind`` "level", "quantile", "density" or "missing"; ``observed`` columns on observed cells."""
    from bayes_risk.data.missing import missing_mask

    rows = []
    pooled = pd.concat(list(synthetic), ignore_index=True)
    for c in schema.names:
        if schema[c].is_categorical:
            o = original[c].astype("object").where(original[c].notna(), "Missing")
            s = pooled[c].astype("object").where(pooled[c].notna(), "Missing")
            if c in observed:
                o, s = o[original[c].notna().to_numpy()], s[pooled[c].notna().to_numpy()]
            po = o.value_counts(normalize=True) * 100
            ps = s.value_counts(normalize=True) * 100
            # the schema's level order (as synthpop's compare()), other levels, then missing values
            seen = list(dict.fromkeys([*po.index, *ps.index]))
            rank = {str(v): i for i, v in enumerate(schema[c].levels or ())}
            levels = sorted(seen, key=lambda v: (str(v) == "Missing" and str(v) not in rank,
                                                 rank.get(str(v), len(rank))))
            for lev in levels:
                rows.append({"variable": c, "kind": "level", "value": str(lev),
                             "original": float(po.get(lev, 0.0)),
                             "synthetic": float(ps.get(lev, 0.0))})
        else:
            codes = schema[c].missing_codes
            ma, mb = missing_mask(original[c], codes), missing_mask(pooled[c], codes)
            if (ma.any() or mb.any()) and c not in observed:
                rows.append({"variable": c, "kind": "missing", "value": "missing",
                             "original": 100 * float(ma.mean()),
                             "synthetic": 100 * float(mb.mean())})
            a = original[c].to_numpy(dtype=float)[~ma]
            b = pooled[c].to_numpy(dtype=float)[~mb]
            a, b = a[np.isfinite(a)], b[np.isfinite(b)]
            if not (a.size and b.size):
                continue
            qs = np.linspace(0, 1, 11)
            for q, x, y in zip(qs, np.quantile(a, qs), np.quantile(b, qs), strict=True):
                rows.append({"variable": c, "kind": "quantile", "value": f"{q:.1f}",
                             "original": float(x), "synthetic": float(y)})
            # densities over the central 99 % of the pooled values (outliers would flatten them)
            ab = np.concatenate([a, b])
            lo, hi = np.quantile(ab, [0.005, 0.995])
            if np.all(ab == np.round(ab)):
                # whole numbers: bins of whole widths centred on them (equal bins would draw combs)
                lo, hi = np.floor(lo), np.ceil(hi)
                w = max(1.0, np.ceil((hi - lo + 1) / 30))
                edges = lo - 0.5 + w * np.arange(int(np.ceil((hi - lo + 1) / w)) + 1)
            else:
                edges = np.linspace(lo, hi if hi > lo else lo + 1.0, 31)
            da, _ = np.histogram(a, bins=edges, density=True)
            db, _ = np.histogram(b, bins=edges, density=True)
            mids = (edges[:-1] + edges[1:]) / 2
            for x, y, z in zip(mids, da, db, strict=True):
                rows.append({"variable": c, "kind": "density", "value": f"{x:.6g}",
                             "original": float(y), "synthetic": float(z)})
    return pd.DataFrame(rows, columns=["variable", "kind", "value", "original", "synthetic"])


def _qi(ctx: StepContext) -> pd.DataFrame | None:
    """The known values of every record when the report may show them."""
    if not ctx.plan.given.show_confidential_values:
        return None
    return ctx.original[ctx.plan.known]


# ---- identification --------------------------------------------------------------------------


def _id_kwargs(ctx: StepContext) -> dict[str, Any]:
    p = ctx.plan
    from bayes_risk.identification.specs import MatchSpec

    return dict(schema=ctx.schema,
                match=MatchSpec(radius=dict(p.radius) or None,
                                radius_type=p.given.match.radius_type,
                                fallback=ID_FALLBACK),
                aggregation="per_dataset", progressbar=ctx.progressbar,
                executor=ctx.executor)


#: the fallback of both identification steps: no match where no record matches
ID_FALLBACK = "none"


def identification_step(ctx: StepContext) -> StepOutcome:
    """Identification risk at the given radius and, over the sweep, the maximising radius."""
    from bayes_risk.auditing.causes import identification_drivers
    from bayes_risk.identification.api import identification_risk

    p = ctx.plan
    kw = _id_kwargs(ctx)
    if p.identification_release_independent:
        release_independent(
            "identification risk", f"the intruder matches on {', '.join(p.known)} only, "
            "which the release carries unchanged (no known column is synthesized), so every "
            "synthetic dataset gives the same figures.")
    known = dict(known=list(p.known), synthesized=list(p.known_synthesized))
    # each run's warnings name the run: the step runs the measure up to six times
    with named_run(f"one dataset at a time, {_radius_label(p.radius)}"):
        res = identification_risk(ctx.original, ctx.synthetic, **known, **kw)
    sweep = at_star = None
    if p.sweep and p.search_columns:
        sweep, rad, at_star = _sweep(ctx, res, {**kw, **known}, "one dataset at a time")
    pooled = _pooled_identification(ctx, kw)
    ctx.run.worst_radius = pooled.radius_star
    ksweep = _known_sweep(ctx, kw)
    given = _given_selection(ctx, kw)
    regimes = dataset_regimes(ctx)
    d = res.to_dict()
    if regimes is not None:
        d["regimes"] = regimes
    d["settings"]["records_output"] = "per-target"
    if sweep is not None:
        d["radius_search"] = sweep.to_dict()
        d["at_maximising_radius"] = {"radius": rad, "summary": at_star.to_dict()["summary"]}
    d["pooled"] = pooled.to_dict()
    if given is not None:
        d["given_selection"] = given
    if ksweep is not None:
        d["known_sweep"] = ksweep.to_dict()
    folder = step_folder(ctx, "identification")
    files: list[str] = []
    if folder is not None:
        # the records at the radii the verdict reads (the worst case), else at the one given
        write_table(ctx, (at_star or res).target_table(), folder / "records.csv", fast=True)
        write_json(folder / "summary.json", d)
        files = ["records.csv", "summary.json"]
        if sweep is not None:
            write_table(ctx, sweep.to_frame(), folder / "radius_search.csv")
            plot_figure(sweep, "profile").savefig(folder / "radius_search.png", dpi=120)
            files += ["radius_search.csv", "radius_search.png"]
        if pooled.sweep is not None:
            write_table(ctx, pooled.sweep.to_frame(), folder / "radius_search_pooled.csv")
            files.append("radius_search_pooled.csv")
        if ksweep is not None:
            files += _write_known_sweep(ctx, ksweep, folder)
    note = None
    if not p.search_columns:
        note = ("no radius to search: every known column is categorical and matched exactly, "
                "the intruder's only choice")
    elif not p.sweep:
        note = (f"radius search not run ({arg_name('sweep', 'None', cli='none')}): the figures "
                f"are at {radius_text(p.radius)}, not the worst case over the radii "
                "(RADIUS_NOT_SEARCHED)")
    return ran("identification", res, folder, files, sweep=sweep, at_r_star=at_star,
               note=note, qi=_qi(ctx), pooled=pooled, known_sweep=ksweep, regimes=regimes,
               given_selection=given,
               drivers=identification_drivers(ctx.original, list(ctx.synthetic), p.known,
                                              p.known_synthesized, aligned=rows_aligned(ctx)))


def _given_selection(ctx: StepContext, kw: dict[str, Any]) -> dict[str, Any] | None:
    """The expected match rate of the intruder who knows why records were selected for
    synthesis (Hu 2019 §4.2.4), when the release's manifest records its rule: that intruder
    knows the synthesized records, so every target's status (the worst case). The larger of
    one dataset at a time and all pooled, each the worst case over the radius search (as the
    step's other lines). ``None``: no rule recorded; ``{"not_computed": why}``: refused."""
    from bayes_risk.exceptions import BayesRiskError
    from bayes_risk.identification.api import identification_risk
    from bayes_risk.identification.radius import radius_search
    from bayes_risk.identification.selection import conditioned, release_rule

    syn, p = ctx.synthetic, ctx.plan
    rule, flags = release_rule(syn), getattr(syn, "synthesized_records", None)
    if rule is None or flags is None:
        return None
    figures = {}
    try:
        c = conditioned(ctx.original, syn, flags, known=list(p.known),
                        synthesized=list(p.known_synthesized), schema=ctx.schema,
                        match=kw["match"])
        for agg in ("per_dataset", "pooled"):
            match = kw["match"] if agg == "per_dataset" else kw["match"].replace(fallback=None)
            ckw = dict(known=c.known, synthesized=c.synthesized, schema=c.schema,
                       aggregation=agg, progressbar=False, executor=kw["executor"])
            with named_run(f"given the selection R, {agg.replace('_', ' ')}"):
                if p.sweep and p.search_columns:
                    s = radius_search(c.original, c.synthetic, radii=list(p.sweep),
                                      match=match.replace(radius=None), **ckw)
                    risk, rad = s.risk_star, dict(zip(s.columns, (float(r) for r in np.atleast_1d(
                        s.r_star)), strict=True))
                else:
                    res = identification_risk(c.original, c.synthetic, match=match, **ckw)
                    risk, rad = res.file["expected_match_risk"], dict(p.radius)
            figures[agg] = {"expected_match_rate": float(risk) / len(ctx.original),
                            "radius": rad}
    except BayesRiskError as err:  # e.g. SELECTION_MISSING_KNOWN: said on the report
        return {"rule": rule.description, "not_computed": f"[{err.code}] {err}"}
    return {"rule": rule.description, "selection": c.knowledge.to_dict(), **figures}


def dataset_regimes(ctx: StepContext) -> dict[str, Any] | None:
    """Which regime of the model's fit each released dataset was drawn from (``None``: agree)."""
    if ctx.model is None:
        return None
    model = loaded_model(ctx)
    summary = getattr(model, "convergence_summary", None)
    reg = summary().get("regimes") if callable(summary) else None
    if not reg or reg.get("agree", True):
        return None
    out: dict[str, Any] = {"regimes": reg["regimes"]}
    draws = getattr(ctx.synthetic, "draw_index", None)
    if draws is None:
        return {**out, "status": "not computed", "dataset_regime": None,
                "reason": "the release does not record the posterior draw of each dataset "
                          "(draw_index of its manifest)"}
    D = int(model.posterior_["posterior"].sizes["draw"])
    of_chain = {c: i + 1 for i, r in enumerate(reg["regimes"]) for c in r["chains"]}
    return {**out, "status": "computed",
            "dataset_regime": [of_chain.get(int(h) // D) for h in draws]}


def _known_curve_note(p: Any, model: Any) -> str | None:
    """Why the known-records curve asked for cannot be computed (``None``: it can)."""
    if p.given.known_fractions is None:
        return None
    from bayes_risk.contract import capabilities

    if capabilities(model).has("plugin") or getattr(model, "model_class", "O") != "P":
        return (f"the curve over the share of records known needs a class P model with "
                f"posterior draws; {type(model).__name__} is not one (the unknown records' "
                "values enter the release given the parameters)")
    return None


def _write_known_sweep(ctx: StepContext, ks: Any, folder: Path) -> list[str]:
    """Write a knowledge sweep's tables into ``folder``; their file names."""
    names = ["known_sweep.csv", "known_sweep_drivers.csv", "known_sweep_levels.csv"]
    for frame, name in zip((ks.table, ks.drivers, ks.levels), names, strict=True):
        write_table(ctx, frame, folder / name, fast=True)
    return names


def _known_sweep(ctx: StepContext, kw: dict[str, Any]) -> Any:
    """The knowledge sweep at the step's radius; ``None`` when not asked for."""
    p = ctx.plan
    if not p.given.known_sweep:
        return None
    from bayes_risk.identification.knowledge import known_sweep

    return known_sweep(ctx.original, ctx.synthetic, candidates=list(p.known),
                       synthesized=list(p.known_synthesized), **kw)


@dataclass
class PooledIdentification:
    """The identification measures of the intruder holding all ``m`` datasets."""

    result: Any
    sweep: Any = None
    at_r_star: Any = None
    radius_star: dict[str, float] | None = None

    @property
    def headline(self) -> Any:
        """The result the verdict reads: at the maximising radius when the sweep ran."""
        return self.at_r_star if self.at_r_star is not None else self.result

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"summary": self.result.to_dict()["summary"],
                               "settings": self.result.settings}
        if self.sweep is not None:
            out["radius_search"] = self.sweep.to_dict()
            out["at_maximising_radius"] = {"radius": self.radius_star,
                                           "summary": self.at_r_star.to_dict()["summary"]}
        return out


def _pooled_identification(ctx: StepContext, kw: dict[str, Any]) -> PooledIdentification:
    """The pooled figures of an intruder holding all m datasets (the verdict reads them)."""
    from bayes_risk.identification.api import identification_risk

    p = ctx.plan
    # the measures only: the verdict and the report read the file measures, and the pooled
    # probabilities π of every (target, record) pair grow as n² (more than 10^8 entries at
    # 10^5 CE-like records); without π the run is counted by match pattern where it can be
    pkw = {**kw, "aggregation": "pooled_measures", "match": kw["match"].replace(fallback=None),
           "progressbar": False}
    args = (ctx.original, ctx.synthetic)
    pkw.update(known=list(p.known), synthesized=list(p.known_synthesized))
    with named_run(f"all {p.m} datasets pooled, {_radius_label(p.radius)}"):
        res = identification_risk(*args, **pkw)
    if not (p.sweep and p.search_columns):
        return PooledIdentification(res)
    sweep, rad, star = _sweep(ctx, res, pkw, f"all {p.m} datasets pooled")
    return PooledIdentification(res, sweep, star, rad)


def _sweep(ctx: StepContext, res: Any, kw: dict[str, Any], how: str) -> tuple[Any, dict, Any]:
    """The worst case over the radius search (:func:`~bayes_risk.radius_search`), the radii of
    its largest expected match risk and every measure there."""
    from bayes_risk.identification.api import identification_risk
    from bayes_risk.identification.radius import radius_search

    p = ctx.plan
    skw = {**kw, "match": kw["match"].replace(radius=None)}
    if skw["aggregation"] == "pooled_measures":  # the search keeps the measures only anyway
        skw["aggregation"] = "pooled"
    with named_run(f"radius search of {', '.join(p.search_columns)}, {how}"):
        sweep = radius_search(ctx.original, ctx.synthetic, radii=list(p.sweep), **skw)
    rad = dict(zip(sweep.columns, (float(r) for r in sweep.r_star), strict=True))
    with named_run(f"{how}, maximising {_radius_label(rad)}"):
        star = res if rad == p.radius else identification_risk(
            ctx.original, ctx.synthetic,
            **{**kw, "match": kw["match"].replace(radius=rad), "progressbar": False})
    return sweep, rad, star


def _radius_label(radius: dict[str, float]) -> str:
    """``"radius Age = 0.1, Income = 0.01"`` (or exact matching), for the runs' warnings."""
    return f"radius {radius_text(radius)}" if radius else radius_text(radius)


#: posterior replicates in an audit: ``n="auto"`` with a small cap
AUDIT_REPLICATES = dict(n="auto", mcse_tol=0.02, min_replicates=100, max_replicates=200,
                        batch_size=10, n_groups=10)


def rebuilt_has_posterior(synthetic: Any) -> bool:
    """Whether the release's synthesizer can be rebuilt and has posterior replicates."""
    from bayes_risk.contract import capabilities
    from bayes_risk.models import rebuildable_synthesizer

    cls = rebuildable_synthesizer(synthetic)
    return cls is not None and capabilities(cls).posterior_replicates


def _posterior_model(ctx: StepContext) -> tuple[Any, str | None]:
    """The model the replicates are drawn from, or ``None`` and why there is none."""
    from bayes_risk.contract import capabilities

    if ctx.model is not None:
        model, src = loaded_model(ctx), "the fitted model given"
    elif rebuilt_has_posterior(ctx.synthetic):
        model = rebuilt_synthesizer(ctx)
        src = f"the rebuilt {type(model).__name__}"
    else:
        return None, ("no fitted model with a posterior was given "
                      f"({arg_name('model', '...', cli='DIR')}) and the release was not made "
                      "by a synthesizer with posterior replicates that can be rebuilt from its "
                      "manifest, such as CART (method: "
                      f"{ctx.synthetic.method or 'unknown'})")
    # CART with equal-weight donors declares no posterior predictive
    if not capabilities(model).posterior_replicates:
        why = f"{type(model).__name__} has no posterior predictive"
        if getattr(model, "donor", "bayes_bootstrap") != "bayes_bootstrap":
            why = (f"{src} draws donors with equal weights (donor={model.donor!r}), not from "
                   "a posterior (Bayesian bootstrap)")
        return None, why
    if hasattr(model, "progressbar"):
        model.progressbar = False
    return model, None


def posterior_identification_step(ctx: StepContext) -> StepOutcome:
    """Identification risk over posterior-predictive replicates (Drechsler & Reiter 2008)."""
    from bayes_risk.identification.api import identification_risk
    from bayes_risk.identification.replicates import PosteriorReplicates

    p = ctx.plan
    name = "posterior_identification"
    if not p.known_synthesized:
        return skipped(name, "no known column is synthesized: posterior replicates of the "
                       "synthesized columns would change no match.")
    model, why = _posterior_model(ctx)
    if model is None:
        return skipped(name, f"{why}; the identification step uses the m released datasets "
                       "as replicates.")
    # the chunk the memory plan stated (the numbers do not depend on it)
    chunk = ctx.run.replicate_chunk or int(AUDIT_REPLICATES["batch_size"])
    pr = PosteriorReplicates(model, random_seed=p.random_seed, chunk_size=chunk,
                             allow_other_model=p.given.allow_other_model, **AUDIT_REPLICATES)
    # the pooled intruder's worst case over the released datasets: its radii and fallback
    # (searching again over the replicates would cost the grid times the replicates)
    radius = ctx.run.worst_radius or p.radius
    with named_run(f"posterior replicates pooled, {_radius_label(radius)}"):
        res = identification_risk(ctx.original, ctx.synthetic, known=list(p.known),
                                  synthesized=list(p.known_synthesized), schema=ctx.schema,
                                  match=_id_kwargs(ctx)["match"].replace(radius=radius or None,
                                                                         fallback=None),
                                  replicates=pr, progressbar=ctx.progressbar,
                                  executor=ctx.executor)
    folder = step_folder(ctx, name)
    files: list[str] = []
    if folder is not None:
        write_table(ctx, res.target_table(), folder / "records.csv", fast=True)
        write_json(folder / "summary.json", res.to_dict())
        plot_figure(res, "running_estimate").savefig(folder / "running_estimate.png", dpi=100)
        files = ["records.csv", "summary.json", "running_estimate.png"]
    return ran(name, res, folder, files, qi=_qi(ctx))


# ---- attribute -------------------------------------------------------------------------------


def loaded_model(ctx: StepContext) -> Any:
    """The fitted model given (loaded from its folder), checked against the original."""
    from bayes_risk.exceptions import ValidationError

    model = ctx.model
    if isinstance(model, (str, Path)):
        from bayes_risk.models import load_model

        model = load_model(model)
        ctx.model = model  # loaded once for every step
    check = getattr(model, "check_fingerprint", None)
    problem = check(ctx.original) if check is not None else None
    if problem is not None:
        raise ValidationError(
            f"model: the original is not the table the model was fitted to ({problem}).",
            code="ORIGINAL_DIFFERS",
        )
    if not ctx.plan.given.allow_other_model:  # allowed: each step's measure warns MODEL_DIFFERS
        from bayes_risk.data.provenance import check_release_model

        check_release_model(model, ctx.synthetic, ctx.original)
    if not ctx.progressbar and hasattr(model, "progressbar"):
        model.progressbar = False
    return model


def _attribute_model(ctx: StepContext) -> Any:
    """The plug-in or fitted model of the attribute step."""
    from bayes_risk.models import plugin_likelihood

    synth = loaded_model(ctx) if ctx.model is not None else rebuilt_synthesizer(ctx)
    return plugin_likelihood(synth, ctx.original, random_seed=ctx.plan.random_seed)


def _candidates(ctx: StepContext, columns: list[str]) -> Any:
    """One-variable-different candidates; ±10 % grids whose zero fallback is stated."""
    from bayes_risk.attribute import CandidateSpec
    from bayes_risk.attribute.candidates import with_zero_fallback

    return with_zero_fallback(CandidateSpec(), ctx.original,
                              [c for c in columns if c in ctx.schema.numeric])


def attribute_step(ctx: StepContext) -> StepOutcome:
    """Attribute risk of every (or the chosen) record under the worst-case intruder."""
    from bayes_risk.attribute.api import attribute_risk

    p = ctx.plan
    if p.attribute_source is None:
        return skipped(
            "attribute", f"no fitted model was given ({arg_name('model', '...', cli='DIR')}) "
            "and the release was not made by a synthesizer with a plug-in likelihood that can "
            f"be rebuilt from its manifest (CART, random forests; method: {p.method or 'unknown'}"
            "), so the intruder's posterior over the synthesized values cannot be computed.")
    from bayes_risk.auditing.causes import attribute_drivers

    model = _attribute_model(ctx)
    spec = _candidates(ctx, p.synthesized)
    opts: dict[str, Any] = dict(candidates=spec, prior="uniform",
                                estimator=p.given.attribute_estimator,
                                random_seed=p.random_seed,
                                allow_other_model=p.given.allow_other_model)
    # the sweep leaves at least one synthesized column to guess
    ks_cols = [c for c in p.known if c in p.synthesized] if p.given.known_sweep else []
    if len(ks_cols) == len(p.synthesized):
        ks_cols = []
    curve_note = _known_curve_note(p, model)
    curve_on = p.given.known_fractions is not None and curve_note is None
    if ks_cols or curve_on or _membership_reuses(ctx, model):
        from bayes_risk.attribute.knowledge import one_seed, shared_refits

        # one seed and one set of refits for the step, its sweeps and the membership step
        opts["random_seed"] = one_seed(p.random_seed)
        fits = shared_refits(ctx.original, ctx.synthetic, model=model,
                             records=p.attribute_records, progressbar=ctx.progressbar, **opts)
        if fits:
            opts["estimator"] = opts["estimator"].replace(augmented=fits, refit_draws=None)
            ctx.run.refits, ctx.run.refits_model = fits, model
    res = attribute_risk(
        ctx.original, ctx.synthetic, model=model, records=p.attribute_records,
        scenario="worst_case", progressbar=ctx.progressbar, executor=ctx.executor, **opts,
    )
    aks = None
    if ks_cols:
        from bayes_risk.attribute.knowledge import attribute_known_sweep

        aks = attribute_known_sweep(ctx.original, ctx.synthetic, model=model, known=ks_cols,
                                    records=p.attribute_records, progressbar=ctx.progressbar,
                                    executor=ctx.executor, **opts)
    curve = None
    if curve_on:
        from bayes_risk.attribute.known_curve import known_fraction_curve

        curve = known_fraction_curve(ctx.original, ctx.synthetic, model=model,
                                     fractions=p.given.known_fractions,
                                     records=p.attribute_records,
                                     progressbar=ctx.progressbar, **opts)
    recs = res.records.index
    drivers = attribute_drivers(ctx.original, list(ctx.synthetic), p.synthesized,
                                np.asarray(recs, dtype=int), spec,
                                [c for c in p.synthesized if c in ctx.schema.numeric],
                                aligned=rows_aligned(ctx))
    # the share with a Bayes factor of the truth at the board's factor (the verdict line's)
    summary = res.to_dict(evidence_factor=p.thresholds.evidence_factor)
    summary["inputs"] = {"model": p.attribute_source}
    if aks is not None:
        summary["known_sweep"] = aks.to_dict()
    if curve is not None:
        summary["known_curve"] = curve.to_dict()
    elif curve_note is not None:
        summary["known_curve"] = {"not_computed": curve_note}
    folder = step_folder(ctx, "attribute")
    files: list[str] = []
    if folder is not None:
        from bayes_risk.auditing.plots import ATTRIBUTE_FIGURES

        # column "record"; with the Bayes factors of the true values
        write_table(ctx, res.to_dataframe(), folder / "records.csv", index=True)
        write_json(folder / "summary.json", summary)
        files = ["records.csv", "summary.json"]
        for kind, name, _ in ATTRIBUTE_FIGURES:
            plot_figure(res, kind).savefig(folder / name, dpi=100)
            files.append(name)
        if aks is not None:
            files += _write_known_sweep(ctx, aks, folder)
        if curve is not None:
            write_table(ctx, curve.table, folder / "known_curve.csv", fast=True)
            files.append("known_curve.csv")
    # mcmc_warnings: the fits' failed checks, also of a model fitted earlier
    return ran("attribute", res, folder, files, summary=summary, qi=_qi(ctx), drivers=drivers,
               known_sweep=aks, known_curve=curve, known_curve_note=curve_note,
               mcmc_warnings=list((res.mcmc or {}).get("warnings", [])))


def _membership_reuses(ctx: StepContext, model: Any) -> bool:
    """Whether the membership step will run on ``model``, so the attribute refits serve both."""
    from bayes_risk.exceptions import NotSupportedError
    from bayes_risk.membership.api import check_model

    if ctx.holdout is None or ctx.model is None or model is not loaded_model(ctx):
        return False
    try:
        check_model(model, selection=ctx.plan.membership_selection)
    except NotSupportedError:
        return False
    return True


def membership_step(ctx: StepContext) -> StepOutcome:
    """Membership risk against the holdout (:func:`bayes_risk.membership_risk`)."""
    from bayes_risk.exceptions import NotSupportedError
    from bayes_risk.membership.api import check_model, membership_risk
    from bayes_risk.membership.specs import AttackSpec, RatioSpec

    if ctx.holdout is None:
        return skipped(
            "membership", f"no holdout was given ({arg_name('holdout', '...', cli='FILE')}: "
            "records of the population that were not in the original), so members cannot be "
            "compared with non-members.")
    if ctx.model is None:
        return skipped(
            "membership", f"no fitted model was given ({arg_name('model', '...', cli='DIR')}): "
            "membership risk needs its likelihood (the posterior draws of a Bayesian model, or "
            "a CART synthesizer's plug-in).")
    model = loaded_model(ctx)
    try:
        check_model(model, selection=ctx.plan.membership_selection)
    except NotSupportedError as err:
        return skipped("membership", f"{err} [{err.code}]")
    run = ctx.run
    shared = run.refits if run.refits is not None and run.refits_model is model else None
    res = membership_risk(model, ctx.original, ctx.synthetic, holdout=ctx.holdout,
                          population=0,
                          attack=AttackSpec(threshold=ctx.plan.thresholds.membership_probability),
                          selection=ctx.plan.membership_selection,
                          ratio=RatioSpec(augmented=shared,
                                          refit_cache=ctx.plan.given.attribute_estimator
                                          .refit_cache),
                          progressbar=ctx.progressbar,
                          random_seed=ctx.plan.random_seed,
                          allow_other_model=ctx.plan.given.allow_other_model)
    summary = res.to_dict()
    summary["refits"] = ("the attribute step's (one per dataset, shared)" if shared is not None
                         else "its own (one per dataset)")
    folder = step_folder(ctx, "membership")
    files: list[str] = []
    if folder is not None:
        write_table(ctx, res.records, folder / "records.csv", index=True)
        write_json(folder / "summary.json", summary)
        files = ["records.csv", "summary.json"]
        for kind, name in (("p_member", "p_member_hist.png"), ("roc", "roc.png")):
            plot_figure(res, kind).savefig(folder / name, dpi=100)
            files.append(name)
    return ran("membership", res, folder, files, summary=summary)
