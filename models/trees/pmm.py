"""Small-cell selection and predictive mean matching (Hawala 2008).

See :doc:`/methods/models` and :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    COLUMN_NAMES,
    HasMethods,
    Interval,
    Options,
    check_params,
    check_value,
)
from bayes_risk._numeric import ties
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk._terminal import progress
from bayes_risk.contract import ModelInfo
from bayes_risk.data.provenance import model_release
from bayes_risk.data.schema import SCHEMA, Schema, infer_schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import require_frame, require_synthesized, validate_table
from bayes_risk.exceptions import CALLER, ConvergenceWarning, DataWarning, ValidationError
from bayes_risk.models.base import FittedAttribute, synthesized_columns
from bayes_risk.models.persistence import saved_array
from bayes_risk.models.trees.base import TreeSynthesizer, records_mask
from bayes_risk.models.trees.cart_state import FittedTable
from bayes_risk.models.trees.seqtree import column_codes
from bayes_risk.models.trees.state import PMMState

__all__ = ["SmallCellPMMSynthesizer", "sensitive_cells", "match_donor", "expected_score",
           "min_cell_count"]

#: the settings a fit checks (``spline_df``: a B-spline basis has at least 3 degrees of freedom)
_SETTINGS = {"threshold": Interval(int, 1), "tie": Options(("random", "first"), listed=True),
             "spline_df": Interval(int, 3)}

Constraint = Callable[[pd.Series, Any], bool]
#: one of the ``constraints`` (a function of a recipient's row and a donor's value)
_CONSTRAINT = HasMethods(("__call__",), "callables allowed(recipient_row, donor_value)")


def sensitive_cells(data: pd.DataFrame, identifying: Sequence[str],
                    threshold: int = 5) -> pd.DataFrame:
    """Non-empty cells of the identifying variables' table with count ≤ ``threshold``: one row
    per cell, the identifying values and ``count``."""
    counts = data.groupby(list(identifying), observed=True, dropna=False).size()
    small = counts[(counts > 0) & (counts <= threshold)]
    return small.rename("count").reset_index()


def min_cell_count(data: pd.DataFrame, identifying: Sequence[str]) -> int:
    """Smallest non-empty cell count of the identifying variables' cross-classification."""
    return int(data.groupby(list(identifying), observed=True, dropna=False).size().min())


def expected_score(probabilities: np.ndarray, scores: Sequence[float] | None = None) -> np.ndarray:
    """Expected score ``Σ_c c · p̂_c`` of ordinal probabilities (Hawala 2008 step 4; scores 1..K).

    Examples
    --------
    >>> round(float(expected_score(np.array([0.2, 0.5, 0.3]))), 12)  # 2.1 up to the last bit
    2.1
    """
    p = np.asarray(probabilities, dtype=np.float64)
    c = np.arange(1, p.shape[-1] + 1) if scores is None else np.asarray(scores, dtype=np.float64)
    return p @ c


def match_donor(recipient_prediction: np.ndarray | float, donor_predictions: np.ndarray, *,
                allowed: np.ndarray | None = None, tie: str = "random",
                rng: np.random.Generator | None = None) -> tuple[int, np.ndarray]:
    """Index of the donor whose prediction is closest to the recipient's (Hawala 2008 step 5;
    Euclidean distance for probability vectors).

    Parameters
    ----------
    recipient_prediction : float or array (d,)
    donor_predictions : array (n_donors,) or (n_donors, d)
    allowed : bool array (n_donors,), optional
        Donors permitted by the logical constraints.
    tie : {"random", "first"}
    rng : Generator
        Needed for ``tie="random"``.

    Returns
    -------
    index : int
        Chosen donor (``-1`` when no donor is allowed).
    tied : ndarray of int
        All donors at the minimum distance.

    Examples
    --------
    >>> match_donor(2.2, np.array([1.0, 2.5, 4.0]), tie="first")[0]
    1
    >>> match_donor(1.75, np.array([1.0, 2.5, 4.0]), tie="first")[1].tolist()
    [0, 1]
    """
    d = np.asarray(donor_predictions, dtype=np.float64)
    r = np.asarray(recipient_prediction, dtype=np.float64)
    dist = np.abs(d - r) if d.ndim == 1 else np.sqrt(((d - r[None, :]) ** 2).sum(axis=1))
    if allowed is not None:
        dist = np.where(np.asarray(allowed, dtype=bool), dist, np.inf)
    best = np.min(dist) if dist.size else np.inf
    if not np.isfinite(best):
        return -1, np.array([], dtype=np.int64)
    # (inf ties inf under a relative tolerance: compare finite distances only)
    tied = np.flatnonzero(np.isfinite(dist) & (ties(dist, best) | (dist <= best)))
    if tie == "first" or tied.size == 1:
        return int(tied[0]), tied
    if rng is None:
        raise ValidationError("tie='random' needs a random generator (rng).")
    return int(tied[rng.integers(tied.size)]), tied


class SmallCellPMMSynthesizer(TreeSynthesizer):
    """Hawala (2008) small-cell partial synthesis by model prediction + predictive mean matching:
    records of cells with count ≤ ``threshold`` take the value of the allowed donor with the
    closest prediction (:doc:`/methods/models`, Small-cell predictive mean matching).

    Parameters
    ----------
    identifying : sequence of str
        The identifying variables defining the cells.
    threshold : int, default 5
        A non-empty cell with count ≤ threshold is sensitive.
    constraints : mapping or sequence, optional
        Callables ``allowed(recipient_row, donor_value) -> bool``: ``{column: callable or
        list}`` or a list for every synthesized column.
    tie : {"random", "first"}
        Tie-breaking between equally close donors.
    predictors : mapping, optional
        ``{column: [predictor columns]}`` (default: all other columns).
    spline_df : int, default 4
        Degrees of freedom of each B-spline basis (numeric models).
    progressbar : bool, default False
    random_seed : RandomSeed, optional
        Default seed of :meth:`synthesize` (temporary fills and random tie-breaking).

    Attributes
    ----------
    schema_, identifying_, synthesize_ (IVs synthesized, in order), recipients_ (bool mask),
    sensitive_cells_ (DataFrame), min_cell_count_before_ (int).
    state_ : ~bayes_risk.models.trees.state.PMMState
        The fitted state (frozen): the cells, the recipients and the fitted table; set by
        :meth:`fit` and ``load``; reading it before raises
        :class:`~bayes_risk.exceptions.NotFittedError`.

    References
    ----------
    Hawala, S. (2008). Producing partially synthetic data to avoid disclosure. Proceedings of the
    Joint Statistical Meetings, Section on Government Statistics.
    """

    method_name = "pmm"
    state_ = FittedAttribute(
        "The fitted :class:`~bayes_risk.models.trees.state.PMMState` (set by ``fit``).")
    default_m = 1  # Hawala's single implicate
    _fitted_attribute: ClassVar[str] = "recipients_"
    info = ModelInfo(partial_synthesis=True, required=("identifying",), releases_donor_values=True)

    def __init__(self, *, identifying: Sequence[str] | None = None, threshold: int = 5,
                 constraints: Mapping[str, Any] | Sequence[Constraint] | None = None,
                 tie: str = "random", predictors: Mapping[str, Sequence[str]] | None = None,
                 spline_df: int = 4, progressbar: bool = False,
                 random_seed: RandomSeed = None) -> None:
        self.identifying = identifying
        self.threshold = threshold
        self.constraints = constraints
        self.tie = tie
        self.predictors = predictors
        self.spline_df = spline_df
        self.progressbar = progressbar
        self.random_seed = random_seed

    def release_settings(self) -> dict[str, Any]:
        """Manifest settings; ``constraints`` by the callables' names."""
        p = super().release_settings()
        c = p["constraints"]
        if c is not None:
            if isinstance(c, Mapping):
                p["constraints"] = {
                    k: [_fname(f) for f in (v if isinstance(v, (list, tuple)) else [v])]
                    for k, v in c.items()
                }
            else:
                p["constraints"] = [_fname(f) for f in c]
        if p["identifying"] is not None:
            p["identifying"] = list(p["identifying"])
        return p

    def fit(self, data: pd.DataFrame, *, schema: Schema | None = None,
            synthesized: Sequence[str] | None = None, records: Any = None,
            random_seed: RandomSeed = None) -> SmallCellPMMSynthesizer:
        """Find the sensitive cells and recipients.

        Parameters
        ----------
        data : DataFrame
        schema : Schema, optional
        synthesized : sequence of str, optional
            IVs to synthesize, in order (default: all identifying variables).
        records : boolean mask or integer positions, optional
            The recipients (default: the records of the sensitive cells).
        random_seed : RandomSeed
            Unused (fitting is deterministic; the common signature).

        Returns
        -------
        SmallCellPMMSynthesizer

        Raises
        ------
        ValidationError
            For invalid settings or columns.
        """
        require_frame(data, 'data')
        check_value(self.identifying, COLUMN_NAMES, "identifying (the identifying variables)")
        check_params(self, _SETTINGS)
        if check_value(schema, [SCHEMA, None], "schema") is None:
            schema = infer_schema(data)
        as_generator(self._fit_seed(random_seed))  # unused by the fit; a bad seed is an error now
        ivs = schema.check_columns(list(self.identifying), "identifying")
        syn = synthesized_columns(synthesized, schema)
        syn = ivs if syn is None else syn
        for c in syn:
            if c not in ivs:
                raise ValidationError(
                    f"synthesized: column {c!r} is not an identifying variable ({ivs}); "
                    "non-identifying variables are never synthesized by this method.")
        schema = schema.with_roles(syn, known=schema.known)
        validate_table(data, schema, name="data", allow_nan=True)
        cons = self._constraints(syn)
        given = self.predictors or {}
        preds = {c: schema.check_columns(list(given[c]), f"predictors[{c!r}]") if c in given
                 else [x for x in schema.names if x != c] for c in syn}
        require_synthesized(given, syn, "predictors")
        self._keep_fitted_table(data, schema)
        data = self._data
        cells = sensitive_cells(data, ivs, int(self.threshold))
        if records is None:
            key = data[ivs].merge(cells.assign(_sens=True), on=ivs, how="left")["_sens"]
            recipients = key.fillna(False).to_numpy(dtype=bool)
        else:
            recipients = records_mask(records, len(data))
            if recipients.all():
                raise ValidationError(
                    "records selects every record as a recipient; predictive mean matching "
                    "needs donors (records left out of the selection).")
        self.schema_ = schema
        self._use_state(PMMState(
            schema=schema, identifying=ivs, synthesize=list(syn), predictors=preds,
            recipients=recipients, sensitive_cells=cells,
            min_cell_count_before=min_cell_count(data, ivs), constraints=cons,
            table=FittedTable(data=data, index=self._index, values={}, records=recipients)))
        return self

    def _use_state(self, st: PMMState) -> None:
        """Keep the fitted state ``st`` (of ``fit`` or ``load``), its public fields as the
        fitted attributes of the same names (the constraints are read from it)."""
        self.state_ = st
        self.identifying_, self.synthesize_ = st.identifying, st.synthesize
        self.predictors_, self.recipients_ = st.predictors, st.recipients
        self.sensitive_cells_ = st.sensitive_cells
        self.min_cell_count_before_ = st.min_cell_count_before

    def _constraints(self, syn: list[str]) -> dict[str, list[Constraint]]:
        c = self.constraints
        out: dict[str, list[Constraint]] = {v: [] for v in syn}
        if c is None:
            return out
        if isinstance(c, Mapping):
            require_synthesized(c, syn, "constraints")
            for k, v in c.items():
                out[k] = list(v) if isinstance(v, (list, tuple)) else [v]
        else:
            fs = [c] if callable(c) else list(c)
            for v in syn:
                out[v] = fs
        for fs in out.values():
            for f in fs:
                check_value(f, _CONSTRAINT, "constraints")
        return out

    def _design(self, df: pd.DataFrame, preds: list[str], splines: bool) -> np.ndarray:
        from patsy.splines import BS

        blocks = []
        for p in preds:
            spec = self.schema_[p]
            if spec.is_categorical:  # indicators, first level dropped
                codes = column_codes(df, self.schema_, p)
                d = spec.n_levels
                # an empty cell is a level of its own, after the others (synthpop's padding)
                ind = np.eye(d + 1)[np.where(codes < 0, d, codes)][:, 1:] if (codes < 0).any() \
                    else np.eye(d)[codes][:, 1:]
                blocks.append(ind[:, ind.std(axis=0) > 0])  # absent levels add nothing
                continue
            x = df[p].to_numpy(dtype=np.float64, na_value=np.nan)
            obs = ~np.isnan(x)
            xo = x[obs]
            nu = np.unique(xo).size
            block = None
            if splines and nu >= 6:
                bs = BS()
                bs.memorize_chunk(xo, df=int(self.spline_df))
                bs.memorize_finish()
                block = np.asarray(bs.transform(xo, df=int(self.spline_df)))
            elif nu > 1:
                block = ((xo - xo.mean()) / xo.std())[:, None]
            if obs.all():
                blocks += [] if block is None else [block]
                continue
            # synthpop's padding of a numeric predictor: its terms 0 in the empty cells, and an
            # indicator of them
            full = np.zeros((x.size, 0 if block is None else block.shape[1]))
            full[obs] = 0.0 if block is None else block
            blocks += [full, (~obs).astype(np.float64)[:, None]]
        return np.column_stack(blocks) if blocks else np.zeros((len(df), 0))

    def _predict(self, df: pd.DataFrame, col: str) -> np.ndarray:
        """Predicted value (or nominal probabilities) of every record; ``NaN`` where ``col`` is
        missing."""
        import statsmodels.api as sm

        missing = df[col].isna().to_numpy()
        if missing.any():
            kept = self._predict(df.loc[~missing], col)
            out = np.full((len(df),) + kept.shape[1:], np.nan)
            out[~missing] = kept
            return out
        spec = self.schema_[col]
        preds = self.predictors_[col]
        numeric = not spec.is_categorical
        X = self._design(df, preds, splines=numeric)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statsmodels' separation/convergence chatter
            if numeric:
                y = df[col].to_numpy(dtype=np.float64)
                res = sm.OLS(y, sm.add_constant(X, has_constant="add")).fit()
                return np.asarray(res.fittedvalues)
            codes = column_codes(df, self.schema_, col)
            present = np.unique(codes)
            if present.size == 1:  # one level only: every prediction is the same
                return np.ones(len(df)) if spec.type == "ordinal" else np.ones((len(df), 1))
            y = np.searchsorted(present, codes)
            if spec.type == "ordinal":
                p, conv = _ordered_logit_proba(X[:, _independent_columns(X)], y)
                self._check_conv(conv, col, "proportional-odds")
                return expected_score(p, scores=present + 1)
            Xn = sm.add_constant(X[:, _independent_columns(X)], has_constant="add")
            res = sm.MNLogit(y, Xn).fit(method="bfgs", disp=False, maxiter=2000)
            self._check_conv(bool(res.mle_retvals.get("converged", True)), col, "multinomial logit")
            full = np.zeros((len(df), spec.n_levels))
            full[:, present] = np.asarray(res.predict())
            return full

    def _check_conv(self, converged: bool, col: str, model: str) -> None:
        if not converged:
            warnings.warn(
                f"the {model} model for {col!r} did not converge (often quasi-separation in small "
                "cells); its predictions are still used only to rank donors, but check the "
                "matches or condense categories.",
                ConvergenceWarning, skip_file_prefixes=CALLER)

    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Produce ``m`` implicates (Hawala 2008 releases one; ``m > 1`` uses independent streams).

        Parameters
        ----------
        m : int
            Number of implicates.
        random_seed : RandomSeed
            Same seed → identical implicates; default: the setting.

        Returns
        -------
        SyntheticData
            ``method="pmm"``; ``extra["warnings"]`` per dataset: ``"SMALL_CELLS_REMAIN"``,
            ``"NO_SENSITIVE_CELLS"``, ``"NO_ALLOWED_DONOR"``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        m, random_seed, gens = self._streams(m, random_seed)
        datasets, after, unmatched, codes = [], [], [], []
        for l in progress(range(m), total=m, description="PMM synthesis", unit="datasets",
                          enabled=self.progressbar):
            z, un = self._synthesize_one(gens[l])
            datasets.append(z)
            mc = min_cell_count(z, self.identifying_)
            after.append(mc)
            unmatched.append(un)
            w = []
            if not self.recipients_.any():
                w.append("NO_SENSITIVE_CELLS")
            if mc <= self.threshold and self.recipients_.any():
                w.append("SMALL_CELLS_REMAIN")
                warnings.warn(DataWarning(
                    f"dataset {l + 1}: a cell of the identifying variables' table still has only "
                    f"{mc} record(s) (threshold {self.threshold}); the donor pool or the "
                    "constraints did not allow all recipients to leave the sensitive cells. "
                    "Consider condensing categories or relaxing constraints.",
                    code="SMALL_CELLS_REMAIN"), skip_file_prefixes=CALLER)
            if un:
                w.append("NO_ALLOWED_DONOR")
            codes.append(w)
        cells = self.sensitive_cells_.copy()
        # a recipient's empty cell is filled with a donor's value
        filled = [c for c in self.synthesize_
                  if self._data[c].iloc[np.flatnonzero(self.recipients_)].isna().any()]
        extra = {
            "identifying": list(self.identifying_), "threshold": int(self.threshold),
            "n_recipients": int(self.recipients_.sum()),
            "sensitive_cells": cells.astype(object).to_dict(orient="records"),
            "min_cell_count_before": int(self.min_cell_count_before_),
            "min_cell_count_after": after, "unmatched": unmatched, "warnings": codes}
        return model_release(self, datasets, random_seed=random_seed,
                             records=self.recipients_.copy(), extra=extra, proper=False,
                             imputed_columns=filled)

    def _synthesize_one(self, rng: np.random.Generator) -> tuple[pd.DataFrame, list[int]]:
        z = self._data.copy()
        rec = np.flatnonzero(self.recipients_)
        don = np.flatnonzero(~self.recipients_)
        unmatched: set[int] = set()
        if rec.size == 0 or don.size == 0:
            z.index = self._index
            return z, []
        # a recipient's value is deleted whether observed or not; a donor gives an observed value
        # (methods, Small-cell predictive mean matching: missing values)
        dons = {col: don[self._data[col].notna().to_numpy()[don]] for col in self.synthesize_}
        # step 2: temporary fills from the donors' values (with replacement)
        for col in self.synthesize_:
            don = dons[col]
            if don.size == 0:
                continue
            s = z[col].copy()
            fill = don[rng.integers(don.size, size=rec.size)]
            s.iloc[rec] = self._data[col].iloc[fill].to_numpy()
            z[col] = s
        for col in self.synthesize_:
            don = dons[col]
            if don.size == 0:  # no observed donor: the recipients keep their values
                unmatched.update(int(i) for i in rec)
                continue
            pred = self._predict(z, col)
            donor_vals = self._data[col].iloc[don].to_numpy()
            uniq = pd.unique(donor_vals)
            new = []
            rules = self.state_.constraints[col]
            for i in rec:
                allowed = None
                if rules:
                    row = z.iloc[i]
                    ok_val = {_key(v): all(bool(f(row, v)) for f in rules) for v in uniq}
                    allowed = np.array([ok_val[_key(v)] for v in donor_vals])
                j, _ = match_donor(pred[i], pred[don], allowed=allowed, tie=self.tie, rng=rng)
                if j < 0:
                    unmatched.add(int(i))
                    new.append(self._data[col].iloc[i])
                else:
                    new.append(donor_vals[j])
            s = z[col].copy()
            s.iloc[rec] = np.asarray(new, dtype=object) if s.dtype == object else new
            z[col] = s
        z.index = self._index
        return z, sorted(unmatched)

    def persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        if any(self.state_.constraints.values()):
            raise ValidationError(
                "constraints: a synthesizer with constraints cannot be saved (they are Python "
                "callables, and a saved model holds no code); expected constraints=None. Keep "
                "the fitted object, or synthesize in the session that defines the constraints.",
                code="CONSTRAINTS_NOT_SAVED")
        state = {"identifying": list(self.identifying_), "synthesized": list(self.synthesize_),
                 "predictors": {c: list(v) for c, v in self.predictors_.items()}}
        return state, {"recipients": np.asarray(self.recipients_, dtype=bool)}

    def restore_state(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        data = self._data
        ivs = list(state["identifying"])
        syn = list(state["synthesized"])
        if not set(ivs) <= set(self.schema_.names) or not set(syn) <= set(ivs):
            raise ValueError(f"model.json's state: the identifying variables {ivs} are not "
                             f"all columns of the schema, or the synthesized {syn} not all "
                             "among them")
        recipients = saved_array(arrays, "recipients", "b", (len(data),))
        self._use_state(PMMState(
            schema=self.schema_, identifying=ivs, synthesize=syn,
            predictors={c: list(v) for c, v in state["predictors"].items()},
            recipients=recipients,
            sensitive_cells=sensitive_cells(data, ivs, int(self.threshold)),
            min_cell_count_before=min_cell_count(data, ivs),
            constraints={v: [] for v in syn},  # a saved synthesizer has none
            table=FittedTable(data=data, index=self._index, values={}, records=recipients)))


def _fname(f: Any) -> str:
    return str(getattr(f, "__name__", repr(f)))


def _key(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _independent_columns(X: np.ndarray) -> np.ndarray:
    """Indices of a maximal set of linearly independent columns (avoids singular fits)."""
    if X.shape[1] == 0:
        return np.arange(0)
    # the intercept (or the ordinal thresholds) is always in the model: test against it too
    Xc = np.column_stack([np.ones(X.shape[0]), X])
    keep: list[int] = [0]
    for j in range(1, Xc.shape[1]):
        cand = keep + [j]
        if np.linalg.matrix_rank(Xc[:, cand]) == len(cand):
            keep.append(j)
    return np.asarray(keep[1:], dtype=np.int64) - 1


def _ordered_logit_proba(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, bool]:
    """Fitted proportional-odds logit probabilities, fitted on the distinct (x, y) patterns
    with frequency weights."""
    from scipy.optimize import minimize
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    Z = np.column_stack([X, y])
    uniq, inv, w = np.unique(Z, axis=0, return_inverse=True, return_counts=True)
    Xu, yu = uniq[:, :-1], uniq[:, -1].astype(np.int64)
    mod = OrderedModel(yu, Xu if Xu.shape[1] else None, distr="logit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(lambda b: -np.sum(w * mod.loglikeobs(b)), mod.start_params,
                       method="BFGS", options={"maxiter": 300})
        probs_u = np.asarray(mod.predict(res.x, exog=Xu if Xu.shape[1] else None))
    # BFGS stops with "precision loss" at the optimum of a flat likelihood: judge by the gradient
    tol = 1e-3 * max(1.0, float(w.sum()) / 100)
    conv = bool(res.success) or bool(np.max(np.abs(res.jac)) < tol)
    return probs_u[np.asarray(inv).ravel()], conv
