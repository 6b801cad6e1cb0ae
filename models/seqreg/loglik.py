"""Likelihood protocol of :class:`~bayes_risk.models.SequentialRegression` (mixin).

Record, dataset, candidate and neighbourhood log-likelihoods: the product over the visit
order of each column's regression density given its design row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.design import (
    NeighbourhoodUnavailable,
    column_values,
    family_loglik,
    row_frame,
)

if TYPE_CHECKING:  # pragma: no cover
    pass


class _SeqRegLikelihoods:
    """Design rows and likelihoods (mixed into ``SequentialRegression``)."""

    # ------------------------------------------------------------------ design helpers
    def _values(self, df: pd.DataFrame, name: str) -> dict[str, np.ndarray]:
        validate_table(df, self.schema_, name=name, extra_columns=True)
        return column_values(df, self.schema_, self.schema_.names)

    def _loglik_from_values(
        self, vals: Mapping[str, np.ndarray], n: int, idx: np.ndarray
    ) -> np.ndarray:
        out = np.zeros((idx.size, n))
        for c in self.order_:
            X = None if self.families_[c] == "categorical" else self.designs_[c].build(vals, n)
            out += family_loglik(self.families_[c], vals[c], X, self._params(c, idx))
        return out

    def design_matrix(self, df: pd.DataFrame, column: str) -> np.ndarray:
        """Design matrix ``[n, q]`` of ``column``'s regression for the rows of ``df``.

        Columns follow ``designs_[column].names``. Useful to check coefficients or build
        candidate rows.
        """
        self._check_fitted()
        if column not in self.order_:
            raise ValidationError(f"column {column!r} is not synthesized (chain: {self.order_}).")
        return self.designs_[column].build(self._values(df, "records"), len(df))

    # ------------------------------------------------------------------ likelihood protocol
    def record_loglik(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n]`` conditional record log-likelihood (methods, Sequential Bayesian regressions).

        ``Σ_v log f_v(y_iv | x_v(y_i^us, y_{i,<v}), Θ_{h,v})``: each synthesized column given
        the record's own unsynthesized and earlier synthesized values.
        """
        self._check_fitted()
        idx = self._draw_indices(draws)
        return self._loglik_from_values(self._values(records, "records"), len(records), idx)

    def dataset_loglik(
        self, datasets: Sequence[pd.DataFrame] | SyntheticData, *, draws: Any = None
    ) -> np.ndarray:
        """``[H, m]`` ``log p(Z_(l) | Θ_h) = Σ_i Σ_v log f_v(z_iv | x_v(z_i), Θ_{h,v})``
        (class P).

        The sum runs over the synthesized records (all records unless the model was fitted with
        ``synthesized_records``; a record released unchanged contributes nothing).
        """
        self._check_fitted()
        if isinstance(datasets, SyntheticData):
            frames = list(datasets.datasets)
        elif isinstance(datasets, pd.DataFrame):
            frames = [datasets]
        else:
            frames = list(datasets)
        idx = self._draw_indices(draws)
        cols = []
        for l, z in enumerate(frames):
            z = self._synthesized_part(z, name=f"synthetic dataset {l + 1}")
            vals = self._values(z, f"synthetic dataset {l + 1}")
            cols.append(self._loglik_from_values(vals, len(z), idx).sum(axis=1))
        return np.stack(cols, axis=1)

    def candidate_loglik(
        self, record_row: pd.DataFrame | pd.Series, candidates: pd.DataFrame, *, draws: Any = None
    ) -> np.ndarray:
        """``[H, G]`` record log-likelihood of each candidate (``log r_h`` terms).

        Candidate ``g`` replaces the record's values of the columns in ``candidates`` (a subset
        of the synthesized columns); every regression is evaluated with earlier synthesized
        predictors set to the candidate values. ``log r_h(y*_g) = out[h, g] − out[h, g0]``.

        Parameters
        ----------
        record_row : one-row DataFrame or Series
            The target record (all columns).
        candidates : DataFrame
            ``G`` rows over some synthesized columns.

        Raises
        ------
        ValidationError
            If a candidate column is not synthesized.
        """
        self._check_fitted()
        record_row = row_frame(record_row)
        if not isinstance(candidates, pd.DataFrame) or len(candidates) == 0:
            raise ValidationError(
                "candidates must be a non-empty DataFrame over synthesized columns."
            )
        bad = [c for c in candidates.columns if c not in self.order_]
        if bad:
            raise ValidationError(
                f"candidates: column {bad[0]!r} is not synthesized (synthesized: {self.order_}); "
                "only synthesized values vary."
            )
        G = len(candidates)
        rows = pd.concat([record_row[self.schema_.names]] * G, ignore_index=True)
        for c in candidates.columns:
            src = candidates[c].reset_index(drop=True)
            if rows[c].dtype != src.dtype:
                rows[c] = rows[c].astype(object)
            rows[c] = src.to_numpy()
        return self.record_loglik(rows, draws=draws)

    def neighbourhood_loglik(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n, G]`` log-likelihoods of the one-variable-different candidates.

        Defined when every synthesized column is categorical: truth first, then column by column
        in column order, levels ascending skipping the true level.

        Raises
        ------
        NeighbourhoodUnavailable
            (a ``ValidationError`` and ``NotImplementedError``) if a synthesized column is
            numeric; use :meth:`candidate_loglik` with a grid.
        """
        self._check_fitted()
        syn = self.schema_.synthesized
        num = [c for c in syn if not self.schema_[c].is_categorical]
        if num:
            raise NeighbourhoodUnavailable(
                f"synthesized column {num[0]!r} is {self.schema_[num[0]].type}: a one-variable-"
                "different neighbourhood exists only for categorical columns; use "
                "candidate_loglik with a grid (docs: methods, Candidate sets)."
            )
        idx = self._draw_indices(draws)
        vals_all = self._values(records, "records")
        n = len(records)
        d = [self.schema_[c].n_levels for c in syn]
        G = 1 + sum(k - 1 for k in d)
        out = np.empty((idx.size, n, G))
        # chunk records so that one block holds at most ~2e7 numbers
        step_n = max(1, int(2e7 // max(1, idx.size * G)))
        for a in range(0, n, step_n):
            b = min(n, a + step_n)
            vals = {c: v[a:b] for c, v in vals_all.items()}
            big = {c: np.repeat(v[:, None], G, axis=1) for c, v in vals.items()}
            g = 1
            for c, k in zip(syn, d, strict=False):
                truth = vals[c].astype(np.int64)
                for lv in range(1, k):
                    # levels ascending skipping the truth: the lv-th level not equal to the truth
                    big[c][:, g] = lv - 1 + (lv - 1 >= truth).astype(np.int64)
                    g += 1
            flat = {c: v.reshape(-1) for c, v in big.items()}
            ll = self._loglik_from_values(flat, (b - a) * G, idx)
            out[:, a:b, :] = ll.reshape(idx.size, b - a, G)
        return out
