"""Likelihoods of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM` that the risk engines use.

Record, dataset and own-record log-likelihoods, the one-variable-different neighbourhood (chunked
over records, with the numba kernels of ``dpmpm.kernels``) and the class probabilities
``p(k | y_i, Θ)`` (Hu & Savitsky 2018).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.dpmpm.coding import _UNKNOWN


class _DPMPMLikelihoods:
    """Mixin of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM`: the risk engines' likelihoods."""

    def _masks(self) -> tuple[np.ndarray, np.ndarray]:
        syn = set(self.schema_.synthesized)
        s = np.array([c in syn for c in self.schema_.names], dtype=bool)
        return s, ~s

    def _sub(self, draws: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if draws is None:  # all draws: the stored arrays themselves (read only), no copy
            return self._logphi, self._log_pi, self._phi
        idx = self._draw_indices(draws)
        return self._logphi[idx], self._log_pi[idx], self._phi[idx]

    def record_loglik(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n]`` joint record log-likelihoods ``log p(y_i | Θ_h)`` (Hu & Savitsky 2018).

        ``logsumexp_k(log π_k + Σ_j log φ_kj[y_ij])``; a missing value is marginalised (its
        column is left out of the sum); a level the model was not fitted with gives ``-inf``.

        Parameters
        ----------
        records : DataFrame
            Records with the model's columns (extra columns are ignored).
        draws : array of int, optional
            Flattened draw indices (default all ``H``).
        """
        import bayes_risk.models.dpmpm.kernels as kern

        self._check_fitted()
        codes = self._encode(records)
        lp, lpi, ph = self._sub(draws)
        p = codes.shape[1]
        unknown = (codes == _UNKNOWN).any(axis=1)
        c = np.where(codes == _UNKNOWN, -1, codes)
        out = kern.lse_two(c, np.ones(p, bool), c, np.zeros(p, bool), self._offsets, lp, lpi)
        if self._zeros is not None:  # zero on S, normalised over the allowed cells
            import bayes_risk.models.dpmpm.zeros_loglik as zl

            zl.record_loglik(self, c, out, lp, lpi, ph)
        out[:, unknown] = -np.inf
        return out

    def dataset_loglik(
        self, datasets: Sequence[pd.DataFrame] | SyntheticData | pd.DataFrame, *, draws: Any = None
    ) -> np.ndarray:
        """``[H, m]`` log-likelihoods ``log p(Z_(l) | Θ_h)`` under the synthesis mode.

        Sum over the synthesized records of: ``marginal`` —
        ``logsumexp_k(log π_k + Σ_{j∈S} log φ_kj[z_ij])``; ``conditional_us`` —
        ``log p(z_i^S | z_i^US, Θ)`` (the released
        unsynthesized values equal the original's); ``posterior_class`` —
        ``logsumexp_k(log p(k | y_i, Θ) + Σ_{j∈S} log φ_kj[z_ij])`` with the confidential
        ``y_i`` (class O).
        """
        import bayes_risk.models.dpmpm.kernels as kern

        self._check_fitted()
        if isinstance(datasets, pd.DataFrame):
            datasets = [datasets]
        datasets = list(datasets)
        lp, lpi, ph = self._sub(draws)
        if self._zeros is not None:
            import bayes_risk.models.dpmpm.zeros_loglik as zl

            return zl.dataset_loglik(self, datasets, lp, lpi, ph)
        s_mask, us_mask = self._masks()
        p = len(s_mask)
        none = np.zeros(p, bool)
        allc = np.ones(p, bool)
        n = self.n_records
        rows = (
            np.arange(n, dtype=np.int64)
            if self.synthesized_records_ is None
            else np.flatnonzero(self.synthesized_records_).astype(np.int64)
        )
        mode = self.synthesis_mode_
        out = np.empty((lp.shape[0], len(datasets)))
        ycodes = None
        if mode == "posterior_class":
            ycodes = self._encode(self.data_, name="data")
        for l, z in enumerate(datasets):
            if len(z) != n:
                raise SchemaError(
                    f"synthetic dataset {l + 1} has {len(z)} rows; the model synthesizes {n}.",
                    code="ROW_COUNT_MISMATCH",
                )
            zc = self._encode(z, name=f"synthetic dataset {l + 1}")
            if np.any(zc[rows][:, s_mask] == _UNKNOWN) or np.any(zc[rows][:, s_mask] < 0):
                out[:, l] = -np.inf
                continue
            zc = np.where(zc == _UNKNOWN, -1, zc)
            if mode == "marginal":
                out[:, l] = kern.lse_two_sum(zc, s_mask, zc, none, self._offsets, lp, lpi, rows, ph)
            elif mode == "conditional_us":
                num = kern.lse_two_sum(zc, allc, zc, none, self._offsets, lp, lpi, rows, ph)
                den = kern.lse_two_sum(zc, us_mask, zc, none, self._offsets, lp, lpi, rows, ph)
                out[:, l] = num - den
            else:
                num = kern.lse_two_sum(ycodes, allc, zc, s_mask, self._offsets, lp, lpi, rows, ph)
                den = kern.lse_two_sum(ycodes, allc, zc, none, self._offsets, lp, lpi, rows, ph)
                out[:, l] = num - den
        return out

    def own_record_delta(
        self,
        record: int | pd.Series,
        candidates: pd.DataFrame,
        datasets: Sequence[pd.DataFrame] | SyntheticData | pd.DataFrame,
        *,
        draws: Any = None,
    ) -> np.ndarray:
        """``[H, m, G]`` own-record term ``ℓ_{hli}(y*_g) − ℓ_{hli}(y_i)`` (class O).

        In ``posterior_class`` mode (class O) synthetic record ``i`` of dataset ``l`` has
        likelihood
        ``ℓ_{hli}(y) = logsumexp_k(log p(k | y, Θ_h) + Σ_{j∈S} log φ_hkj[z_lij])``,
        which depends on the confidential record ``y``; the candidate ``y*`` replaces the
        varying columns of ``y_i``. In the class P modes, and for records that are not
        synthesized, the term is 0.

        Parameters
        ----------
        record : int or Series
            Record position ``i`` in the original data, or the original row (its ``name`` is
            taken as the position, as ``original.iloc[i]`` gives).
        candidates : DataFrame
            ``G`` candidate values of the varying columns (any subset of the model's columns).
        datasets : sequence of DataFrame or SyntheticData
            The ``m`` released datasets (same row order as the original).
        draws : array of int, optional
            Flattened draw indices.
        """
        self._check_fitted()
        if isinstance(datasets, pd.DataFrame):
            datasets = [datasets]
        datasets = list(datasets)
        idx = self._draw_indices(draws)
        G = len(candidates)
        out = np.zeros((len(idx), len(datasets), G))
        if self.synthesis_mode_ != "posterior_class":
            return out
        pos = record.name if isinstance(record, pd.Series) else record
        if isinstance(pos, bool) or not isinstance(pos, (int, np.integer)) or not (
            0 <= int(pos) < self.n_records
        ):
            raise ValidationError(
                f"record must be a position in 0..{self.n_records - 1} (or original.iloc[i]). "
                f"Got {pos!r}."
            )
        pos = int(pos)
        if self.synthesized_records_ is not None and not self.synthesized_records_[pos]:
            return out
        if not isinstance(candidates, pd.DataFrame):
            raise ValidationError("candidates must be a DataFrame of the varying columns.")
        vary = self.schema_.check_columns(list(candidates.columns), "candidates")
        truth = self.data_.iloc[[pos]].reset_index(drop=True)
        full = pd.concat([truth] * (G + 1), ignore_index=True).astype(object)
        for c in vary:
            full.loc[1:, c] = candidates[c].astype(object).to_numpy()
        codes = self._encode(full, name="candidates")
        lp, lpi = self._logphi[idx], self._log_pi[idx]
        A = self._class_logw(codes, lp, lpi, np.ones(codes.shape[1], bool))  # [H, G+1, K]
        from bayes_risk._numeric import logsumexp

        den = logsumexp(A, axis=-1)  # [H, G+1]
        s_mask, _ = self._masks()
        for l, z in enumerate(datasets):
            zc = self._encode(z.iloc[[pos]], name=f"synthetic dataset {l + 1}")[0]
            B = np.zeros((len(idx), lpi.shape[1]))
            if self._zeros is not None:  # the synthesized part's normaliser given the class
                import bayes_risk.models.dpmpm.zeros_loglik as zl

                B, inside = zl.own_record_terms(self, codes, zc, lp, lpi, self._phi[idx])
                den[:, inside] = -np.inf
            for j in np.flatnonzero(s_mask):
                if zc[j] == _UNKNOWN:
                    B[:] = -np.inf
                elif zc[j] >= 0:
                    B += lp[:, self._offsets[j] + zc[j], :]
            with np.errstate(invalid="ignore"):
                ell = logsumexp(A + B[:, None, :], axis=-1) - den  # [H, G+1]
                d = ell[:, 1:] - ell[:, :1]
            d[~np.isfinite(den[:, 1:])] = -np.inf  # candidate impossible under the model
            out[:, l, :] = d
        return out

    def neighbourhood_size(self) -> int:
        """``G = 1 + Σ_{j∈S} (d_j − 1)`` of the one-variable-different set."""
        self._check_fitted()
        s_mask, _ = self._masks()
        return int(1 + np.sum(self._d[s_mask] - 1))

    def neighbourhood_loglik(
        self,
        records: pd.DataFrame,
        *,
        draws: Any = None,
        chunk_size: int | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """``[H, n, G]`` joint log-likelihoods of the one-variable-different candidates.

        Candidates (methods, Candidate sets) vary the synthesized columns: index 0 is the truth,
        then column by column in column order, levels ascending, skipping the true level;
        ``G = 1 + Σ_{j∈S}(d_j − 1)`` (:meth:`neighbourhood_size`). Uses the probability-space
        incremental update (see :func:`bayes_risk.models.dpmpm.kernels.neighbourhood`), chunked
        over records. ``out`` (float64 ``[H, n, G]``) receives the result when given: callers
        that evaluate many chunks reuse one buffer instead of allocating a large array each time.

        Raises
        ------
        SchemaError
            If a record has a missing value or a level the model was not fitted with
            (``TRUTH_OUTSIDE_SUPPORT``).
        """
        import bayes_risk.models.dpmpm.kernels as kern
        from bayes_risk._numeric import threaded_ufunc

        self._check_fitted()
        codes = self._encode(records)
        if np.any(codes == -1):
            i, j = np.argwhere(codes == -1)[0]
            raise SchemaError(
                f"records: column {self.schema_.names[j]!r} is missing in row {i}; candidate "
                "sets need complete records.",
                code="MISSING_VALUES",
            )
        if np.any(codes == _UNKNOWN):
            i, j = np.argwhere(codes == _UNKNOWN)[0]
            raise SchemaError(
                f"records: row {i} has a level of column {self.schema_.names[j]!r} the model was "
                "not fitted with.",
                code="TRUTH_OUTSIDE_SUPPORT",
            )
        lp, lpi, ph = self._sub(draws)
        s_mask, _ = self._masks()
        syn_cols = np.flatnonzero(s_mask).astype(np.int64)
        G = self.neighbourhood_size()
        H, n = lp.shape[0], codes.shape[0]
        if chunk_size is None:
            chunk_size = max(1, int(2e7 // max(1, H * G)))
        if out is None:
            out = np.empty((H, n, G))
        elif out.shape != (H, n, G) or out.dtype != np.float64:
            raise ValidationError(
                f"out must be a float64 array of shape {(H, n, G)}; got {out.dtype} {out.shape}."
            )
        for a in range(0, n, chunk_size):
            b = min(n, a + chunk_size)
            dest = out[:, a:b, :]
            logged = kern.neighbourhood(
                np.ascontiguousarray(codes[a:b]), syn_cols, self._d, self._offsets, lp, ph, lpi,
                dest,
            )
            # the kernel leaves probabilities (logged = False) for numpy's vectorised log
            keep = dest[logged] if logged.any() else None
            # (log-space rows give nan here; they are restored just below)
            threaded_ufunc(np.log, dest, out=dest, divide="ignore", invalid="ignore")
            if keep is not None:
                dest[logged] = keep
        if self._zeros is not None:  # zero on S, normalised over the allowed cells
            import bayes_risk.models.dpmpm.zeros_loglik as zl

            zl.neighbourhood(self, codes, syn_cols, out, lpi, ph)
        return out

    def class_probabilities(self, records: pd.DataFrame, *, draws: Any = None) -> np.ndarray:
        """``[H, n, K]`` class probabilities ``p(k | y_i, Θ_h)`` (missing values marginalised)."""
        self._check_fitted()
        codes = self._encode(records)
        lp, lpi, _ = self._sub(draws)
        logw = self._class_logw(codes, lp, lpi, np.ones(codes.shape[1], bool))
        from bayes_risk._numeric import normalise_log

        return normalise_log(logw, axis=-1)

    def _class_logw(self, codes, lp, lpi, use) -> np.ndarray:
        """``[H, n, K]`` of ``log π_k + Σ_{j∈use, observed} log φ_kj[y_ij]``."""
        H, K = lpi.shape
        out = np.broadcast_to(lpi[:, None, :], (H, codes.shape[0], K)).copy()
        for j in np.flatnonzero(use):
            c = codes[:, j]
            ok = c >= 0
            out[:, ok, :] += lp[:, self._offsets[j] + c[ok], :]
            bad = c == _UNKNOWN
            out[:, bad, :] = -np.inf
        return out
