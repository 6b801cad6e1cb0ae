"""The base class of the tree plug-in likelihoods (``CARTPlugin``, ``RFPlugin``): value
encoding, candidate rows and the per-release cache. See :doc:`/methods/attribute`, Tree
synthesizers: plug-in likelihoods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.contract import ModelInfo
from bayes_risk.data.validate import require_frame, require_synthesized
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.trees.missing import kind_codes

__all__ = ["PluginBase"]

class PluginBase:
    """Value encoding, candidate rows and the per-release cache shared by the plug-ins."""

    model_class = "O"
    ratio_form = "joint"
    plugin = True
    holds_missing = True  # a record's missing values are held at their missingness kind
    result_warnings: tuple[str, ...] = ()
    info = ModelInfo(holds_missing=True)

    schema_: Any
    synthesizer: Any
    original: pd.DataFrame

    def _bind(self, synthesizer: Any, original: pd.DataFrame, expected: str) -> None:
        from bayes_risk.models.base import check_is_fitted

        # ``expected`` is the class's dotted path, compared along the MRO: the synthesizers
        # build their plug-ins (their ``plugin_likelihood`` method), so importing them here
        # would close an import cycle
        if expected not in {f"{k.__module__}.{k.__qualname__}"
                            for k in type(synthesizer).__mro__}:
            raise ValidationError(
                f"synthesizer must be a fitted bayes_risk.models.{expected.rpartition('.')[2]}. "
                f"Got {type(synthesizer).__name__}.")
        check_is_fitted(synthesizer, "schema_")
        # columns with missing values ({} for complete data), encoded as the synthesizer does
        self._layout = dict(getattr(synthesizer, "missing_", None) or {})
        require_frame(original, "original")
        n_fit = len(synthesizer.state_.table.data)
        if len(original) != n_fit:
            raise ValidationError(
                f"original has {len(original)} rows; the synthesizer was fitted to {n_fit}.",
                code="ROW_COUNT_MISMATCH")
        missing = [c for c in synthesizer.schema_.names if c not in original.columns]
        if missing:
            raise ValidationError(f"original is missing the synthesizer's column(s) {missing}.",
                                  code="MISSING_COLUMN")
        self.synthesizer = synthesizer
        self.schema_ = synthesizer.schema_
        self.original = original[self.schema_.names].reset_index(drop=True)
        self._vals = self._values(self.original)
        fitted = synthesizer.state_.table.values
        for c in self.schema_.names:  # the trees' donors are the fitted rows: check the match
            close = np.isclose(self._vals[c], np.asarray(fitted[c], dtype=np.float64),
                               rtol=1e-12, atol=0.0, equal_nan=True)
            if not close.all():
                r = int(np.flatnonzero(~close)[0])
                raise ValidationError(
                    f"original differs from the data the synthesizer was fitted to (column "
                    f"{c!r}, row {r}); pass the same table in the same row order.",
                    code="ORIGINAL_DIFFERS")
        self._cache: dict[Any, Any] = {}
        self._cache_owner: Any = None
        self._level_codes: dict[str, dict[Any, float]] = {}

    def _values(self, df: pd.DataFrame,
                columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """The synthesizer's encoding of ``df`` (float64)."""
        from bayes_risk.models.trees.missing import encoded_values

        return {c: np.asarray(v, dtype=np.float64)
                for c, v in encoded_values(df, self.schema_, self._layout, columns).items()}

    def _kinds(self, c: str, v: np.ndarray) -> np.ndarray:
        """Missingness kind of encoded values of column ``c`` (0: observed)."""
        lay = self._layout.get(c)
        v = np.asarray(v, dtype=np.float64)
        if lay is None:
            return np.zeros(v.shape, dtype=np.int64)
        if lay["type"] == "level":
            return (v == self.schema_[c].n_levels).astype(np.int64)
        return kind_codes(v, lay["codes"])

    def _hold_missing(self, recs: np.ndarray, G: int, cand: dict[str, np.ndarray],
                      columns: Sequence[str]) -> np.ndarray:
        """Hold each record's missing values at their kind in ``cand`` (its ``G`` rows, in
        place); return the ``[R·G]`` candidates that change a kind (probability 0)."""
        off = np.zeros(recs.size * G, dtype=bool)
        for c in columns:
            if c not in self._layout:
                continue
            t = np.repeat(self._vals[c][recs], G)
            k_t = self._kinds(c, t)
            v = cand[c]
            cand[c] = v = np.where((k_t > 0) & np.isnan(v), t, v)
            off |= self._kinds(c, v) != k_t
        return off

    def _release(self, synthetic: Sequence[pd.DataFrame]) -> None:
        """Per-dataset state is cached for one release."""
        if synthetic is not self._cache_owner:
            self._cache = {}
            self._cache_owner = synthetic

    def _check_varying(self, candidates: pd.DataFrame) -> None:
        require_synthesized(candidates.columns, self.schema_.synthesized, "candidates",
                            note="; only the synthesized columns vary")

    def _candidate_rows(self, i: int, candidates: pd.DataFrame) -> pd.DataFrame:
        self._check_varying(candidates)
        rows = self.original.iloc[[i] * len(candidates)].reset_index(drop=True)
        for c in candidates.columns:
            v = candidates[c].to_numpy()
            if isinstance(rows[c].dtype, pd.CategoricalDtype):
                rows[c] = pd.Categorical(v, dtype=rows[c].dtype)
            else:
                try:
                    rows[c] = pd.Series(v, dtype=rows[c].dtype)
                except (TypeError, ValueError):
                    rows[c] = pd.Series(v)
        return rows

    def _candidate_values_many(self, recs: np.ndarray, candidates: pd.DataFrame
                               ) -> dict[str, np.ndarray]:
        """The encoded candidate rows of records ``recs``, ``len(candidates) / R`` each in
        record order (the record's other values at the truth): ``_values(_candidate_rows(i,
        candidates))`` for one record ``i``, without data frames where possible."""
        self._check_varying(candidates)
        G = len(candidates) // max(recs.size, 1)
        out = {c: np.repeat(self._vals[c][recs], G) for c in self.schema_.names}
        slow = []
        for c in candidates.columns:
            v = self._fast_values(c, candidates[c].to_numpy())
            if v is None:
                slow.append(c)
            else:
                out[c] = v
        for k, i in enumerate(recs):  # the careful path: a data frame per record
            if not slow:
                break
            rows = self._candidate_rows(int(i), candidates[slow].iloc[k * G:(k + 1) * G])
            for c, v in self._values(rows, slow).items():
                out[c][k * G:(k + 1) * G] = v
        return out

    def _fast_values(self, c: str, v: np.ndarray) -> np.ndarray | None:
        """``v`` encoded without pandas, or ``None`` where the careful path is needed."""
        dtype = self.original[c].dtype
        if self.schema_[c].is_categorical:
            lut = self._level_codes.get(c)
            if lut is None:
                lut = self._level_codes[c] = {
                    lev: float(k) for k, lev in enumerate(self.schema_[c].levels or ())
                }
            try:
                return np.array([lut[x] for x in v], dtype=np.float64)
            except (KeyError, TypeError):  # unseen or unhashable: the careful path decides
                return None
        # float64 / int64 columns: the coercion in _candidate_rows leaves numeric values as
        # they are (narrower dtypes would round or overflow: the careful path)
        if dtype in (np.float64, np.int64) and v.dtype.kind in "iuf":
            return v.astype(np.float64)
        return None

    def plugin_loglik(self, record: int, candidates: pd.DataFrame,
                      synthetic: Sequence[pd.DataFrame], *,
                      return_se: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """``[m, G]`` log-likelihood of each dataset under each candidate (up to a common
        constant).

        Parameters
        ----------
        record : int
            Row position of the target record.
        candidates : DataFrame
            ``G`` rows over some synthesized columns (decoded values); the record's other
            values stay at the truth.
        synthetic : sequence of DataFrame
            The released datasets (state is cached while the same list is passed).
        return_se : bool
            Also return the ``[m, G]`` Monte Carlo standard errors of each candidate's difference
            from the truth (``0`` where the likelihood is exact).

        Returns
        -------
        ndarray, shape (m, G), or (that, standard errors of the same shape)
        """
        ll, se = self.plugin_loglik_many([record], candidates, synthetic)
        return (ll[0], se[0]) if return_se else ll[0]

    def plugin_loglik_many(self, records: Sequence[int] | np.ndarray, candidates: pd.DataFrame,
                           synthetic: Sequence[pd.DataFrame]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`plugin_loglik` of several records at once, with the standard errors.

        Parameters
        ----------
        records : sequence of int
            Row positions of the ``R`` target records.
        candidates : DataFrame
            ``R·G`` rows: each record's ``G`` candidates in turn, in the order of ``records``.
        synthetic : sequence of DataFrame
            The released datasets.

        Returns
        -------
        loglik, se : ndarray, shape (R, m, G)
            Each record's :meth:`plugin_loglik` and its Monte Carlo standard errors (the same
            numbers as record by record: only the loops are shared).
        """
        self._release(synthetic)
        recs = np.asarray(records, dtype=np.int64).ravel()
        if recs.size == 0 or len(candidates) % recs.size:
            raise ValidationError(
                f"candidates has {len(candidates)} rows; expected the same number for each of "
                f"the {recs.size} records.", code="INVALID_ARGUMENT")
        G = len(candidates) // recs.size
        cand = self._candidate_values_many(recs, candidates)
        columns = list(candidates.columns)
        off = self._hold_missing(recs, G, cand, columns)
        if off.any():  # evaluated as the truth, then given probability 0
            for c in columns:
                cand[c] = np.where(off, np.repeat(self._vals[c][recs], G), cand[c])
        ll, var = self._loglik_many(recs, G, cand, columns, synthetic)
        if off.any():
            ll[:, off] = -np.inf
            var[:, off] = 0.0
        m = ll.shape[0]
        return (np.moveaxis(ll.reshape(m, recs.size, G), 1, 0),
                np.moveaxis(np.sqrt(var).reshape(m, recs.size, G), 1, 0))

    def _loglik_many(self, recs: np.ndarray, G: int, cand: dict[str, np.ndarray],
                     varying: list[str], synthetic: Sequence[pd.DataFrame]
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``[m, R·G]`` log-likelihoods and Monte Carlo variances, record by record."""
        out, var = [], []
        for k, i in enumerate(recs):
            res = self._loglik(int(i), {c: v[k * G:(k + 1) * G] for c, v in cand.items()},
                               varying, synthetic)
            ll, v = res if isinstance(res, tuple) else (res, np.zeros_like(res))
            out.append(ll)
            var.append(v)
        return np.concatenate(out, axis=1), np.concatenate(var, axis=1)

    def _loglik(self, i: int, cand: dict[str, np.ndarray], varying: list[str],
                synthetic: Sequence[pd.DataFrame]) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def _released_as_is(released: dict[str, np.ndarray], cand: dict[str, np.ndarray],
                        columns: Sequence[str]) -> np.ndarray:
        """Log-likelihood ``0``/``-inf`` of values released unaltered (``[G]``)."""
        ok = np.ones(len(cand[columns[0]]) if columns else 0, dtype=bool)
        for c in columns:
            r, v = released[c], cand[c]
            if np.isnan(r):  # released empty (held missing values are compared as they are)
                ok &= np.isnan(v)
            else:
                ok &= np.abs(v - r) <= 1e-9 * max(1.0, abs(r))
        return np.where(ok, 0.0, -np.inf)
