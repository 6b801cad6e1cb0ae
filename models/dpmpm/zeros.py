"""Structural zeros of the DPMPM (Manrique-Vallier & Reiter 2014; Manrique-Vallier & Hu 2018).

The patterns (NPBayesImputeCat's ``MCZ`` format) become disjoint boxes, so that ``P(S | Θ)``
counts nothing twice. See :doc:`/methods/models` (Structural zeros).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.levels import normalise_level
from bayes_risk.exceptions import SchemaError, ValidationError

__all__ = ["StructuralZeros", "read_structural_zeros"]

UNKNOWN = -2  # code of a level the model was not fitted with (log-probability -inf)
MAX_REJECTION_ROUNDS = 10_000  # redraw rounds before a conditional is declared (near) empty
_FEW_ROUNDS = 20  # rejection rounds before the remaining records are drawn by enumeration
_MAX_COMPLETIONS = 4096  # enumerate a record's completions up to this many
_MAX_TABLE_CELLS = 1 << 25  # up to this many cells, membership is one lookup in a bool table


def read_structural_zeros(obj: Any) -> pd.DataFrame:
    """The table of structural zeros from a DataFrame, a CSV path or a list of row mappings.

    Every value is kept as text or as a missing value ("any level"), as NPBayesImputeCat's
    ``MCZ``; levels are matched to the data's levels when the model is fitted.
    """
    if isinstance(obj, pd.DataFrame):
        df = obj.copy()
    elif isinstance(obj, (str, os.PathLike)):
        path = os.fspath(obj)
        if not os.path.isfile(path):
            raise ValidationError(f"structural_zeros: file {path!r} does not exist.",
                                  code="FILE_NOT_FOUND")
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
        except (ValueError, pd.errors.ParserError) as err:
            raise ValidationError(
                f"structural_zeros: {path!r} is not a readable CSV table ({err}).",
                code="FILE_UNREADABLE"
            ) from err
    elif isinstance(obj, Sequence) and all(isinstance(r, Mapping) for r in obj):
        df = pd.DataFrame(list(obj))
    else:
        raise ValidationError(
            "structural_zeros must be a DataFrame, the path of a CSV file or a list of rows "
            f"(mappings column -> level, missing = any level). Got {type(obj).__name__}.",
            code="INVALID_ARGUMENT"
        )
    if len(df) == 0 or df.shape[1] == 0:
        raise ValidationError("structural_zeros: the table has no pattern (no rows or columns).",
                              code="INVALID_ARGUMENT")
    return df.reset_index(drop=True)


class StructuralZeros:
    """Structural-zero set ``S`` as disjoint boxes over the model's encoded levels.

    Parameters
    ----------
    table : DataFrame
        Patterns (NPBayesImputeCat ``MCZ`` format); columns a subset of ``names`` (a column left
        out means any level).
    names : sequence of str
        The model's columns, in order.
    levels : sequence of sequence
        The levels of each column (their codes are the positions).
    """

    def __init__(self, table: pd.DataFrame, names: Sequence[str], levels: Sequence[Sequence]):
        self.names = list(names)
        self.d = np.array([len(lv) for lv in levels], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.d)[:-1]]).astype(np.int64)
        self.L = int(self.d.sum())
        unknown = [c for c in table.columns if c not in self.names]
        if unknown:
            raise SchemaError(
                f"structural_zeros: column(s) {unknown} are not columns of the model "
                f"{self.names}.",
                code="UNKNOWN_COLUMN",
            )
        self.table = table.reset_index(drop=True)
        boxes: list[np.ndarray] = []
        for r in range(len(table)):
            box = np.ones(self.L, dtype=bool)
            fixed = 0
            for j, name in enumerate(self.names):
                if name not in table.columns or pd.isna(table.at[r, name]):
                    continue
                c = _level_code(table.at[r, name], levels[j])
                if c is None:
                    raise SchemaError(
                        f"structural_zeros row {r + 1}: {table.at[r, name]!r} is not a level of "
                        f"column {name!r} (levels {list(levels[j])}).",
                        code="UNKNOWN_LEVEL",
                    )
                a = self.offsets[j]
                box[a : a + self.d[j]] = False
                box[a + c] = True
                fixed += 1
            if fixed == 0:
                raise ValidationError(
                    f"structural_zeros row {r + 1} has no level (every column 'any level'): it "
                    "would make every record impossible.",
                    code="INVALID_ARGUMENT"
                )
            boxes.extend(self._minus(box, boxes))
        self.boxes = np.array(boxes, dtype=bool).reshape(-1, self.L)  # disjoint, [B, L]
        # wild[b, j]: box b allows every level of column j (factor 1, left out exactly)
        blocks = zip(self.offsets, self.d, strict=True)
        self.wild = np.stack([self.boxes[:, a : a + dj].all(axis=1) for a, dj in blocks], axis=1)
        # sizes[b, j] = |A_bj|: the boxes are disjoint, so volumes add up
        self.sizes = np.stack(
            [self.boxes[:, a : a + dj].sum(axis=1) for a, dj in zip(self.offsets, self.d,
                                                                   strict=True)], axis=1)
        self._table = None
        if float(np.prod(self.d.astype(np.float64))) <= _MAX_TABLE_CELLS:
            table = np.zeros(tuple(int(x) for x in self.d), dtype=bool)
            for box in self.boxes:
                table[np.ix_(*[np.flatnonzero(box[a : a + dj])
                               for a, dj in zip(self.offsets, self.d, strict=True)])] = True
            self._table = table.ravel()

    def _minus(self, box: np.ndarray, others: Sequence[np.ndarray]) -> list[np.ndarray]:
        """``box`` minus the union of ``others`` as disjoint boxes."""
        pieces = [box]
        for t in others:
            out = []
            for s in pieces:
                blocks = [(a, a + dj) for a, dj in zip(self.offsets, self.d, strict=True)]
                if any(not np.any(s[a:b] & t[a:b]) for a, b in blocks):
                    out.append(s)  # disjoint from t
                    continue
                cur = s.copy()
                for a, b in blocks:
                    rest = cur[a:b] & ~t[a:b]
                    if rest.any():
                        piece = cur.copy()
                        piece[a:b] = rest
                        out.append(piece)
                        cur[a:b] &= t[a:b]
                # what is left of ``cur`` lies inside t: dropped
            pieces = out
        return pieces

    def to_records(self) -> list[dict[str, Any]]:
        """The patterns as JSON-ready rows (``None`` = any level), as given."""
        out = []
        for r in range(len(self.table)):
            out.append({
                c: (None if pd.isna(v) else normalise_level(v))
                for c, v in self.table.iloc[r].items()
            })
        return out

    def contains(self, codes: np.ndarray) -> np.ndarray:
        """``[...]`` bool: the records ``codes[..., p]`` lie in ``S``.

        A missing entry (code ``< 0``) matches only a box that leaves its column free (the
        record is in ``S`` whatever the missing value).
        """
        codes = np.asarray(codes, dtype=np.int64)
        miss = codes < 0
        if self._table is not None and not miss.any():
            return self._table[np.ravel_multi_index(np.moveaxis(codes, -1, 0), self.d)]
        rows = np.maximum(codes, 0) + self.offsets
        out = np.zeros(codes.shape[:-1], dtype=bool)
        for box, wild in zip(self.boxes, self.wild, strict=True):
            out |= np.where(miss, wild, box[rows]).all(axis=-1)
        return out

    def check_observed(self, codes: np.ndarray, *, name: str = "data") -> None:
        """Raise if a record is impossible: complete and in ``S``, or every completion of its
        missing values in ``S``."""
        codes = np.asarray(codes, dtype=np.int64)
        miss = codes < 0
        rows = np.maximum(codes, 0) + self.offsets
        # the completions of record i form a box C_i; the boxes of S are disjoint, so C_i lies
        # in S exactly when the volumes |C_i ∩ b| add up to |C_i|
        total = np.prod(np.where(miss, self.d, 1).astype(np.float64), axis=1)
        covered = np.zeros(len(codes))
        for b, box in enumerate(self.boxes):
            meets = np.where(miss, True, box[rows]).all(axis=1)
            covered += meets * np.prod(np.where(miss, self.sizes[b], 1).astype(np.float64),
                                       axis=1)
        bad = np.flatnonzero(covered >= total)
        if bad.size:
            i = int(np.min(bad))
            raise SchemaError(
                f"{name}: row {i} lies in a structural zero (a combination declared impossible "
                f"in structural_zeros; {int(bad.size)} such row(s)). Correct the record or the "
                "table of structural zeros.",
                code="STRUCTURAL_ZERO_OBSERVED",
            )

    def _box_column_logmass(self, phi: np.ndarray) -> np.ndarray:
        """``[H, B, p, K]`` ``log Σ_{c ∈ A_bj} φ_kj[c]`` (0 where the box leaves ``j`` free)."""
        H, _, K = phi.shape
        out = np.zeros((H, len(self.boxes), len(self.d), K))
        for j, (a, dj) in enumerate(zip(self.offsets, self.d, strict=True)):
            m = self.boxes[:, a : a + dj].astype(np.float64)  # [B, dj]
            s = np.einsum("bc,hck->hbk", m, phi[:, a : a + dj, :])
            with np.errstate(divide="ignore"):
                out[:, :, j, :] = np.where(self.wild[None, :, j, None], 0.0, np.log(s))
        return out

    def log_mass(self, phi: np.ndarray, log_pi: np.ndarray) -> np.ndarray:
        """``[H]`` ``log P(S | Θ_h)`` for ``phi[H, L, K]``, ``log_pi[H, K]``."""
        from bayes_risk._numeric import logsumexp

        q = self._box_column_logmass(phi).sum(axis=2)  # [H, B, K]
        return logsumexp(q + log_pi[:, None, :], axis=(1, 2))

    def log_allowed(self, phi: np.ndarray, log_pi: np.ndarray) -> np.ndarray:
        """``[H]`` ``log(1 − P(S | Θ_h))``, the log normaliser of the truncated model."""
        return np.log1p(-np.minimum(np.exp(self.log_mass(phi, log_pi)), 1.0))

    def section_logmass(
        self, codes: np.ndarray, cond: np.ndarray, phi: np.ndarray, lp: np.ndarray
    ) -> np.ndarray:
        """``[H, n, K]`` ``log P(y_C = x_C, y ∈ S | z = k, Θ_h)`` per class.

        ``x_C`` are the observed entries (codes ``>= 0``) of ``codes[n, p]`` in the columns
        ``cond`` (bool ``[p]``); the other columns are summed over.
        """
        codes = np.asarray(codes, dtype=np.int64)
        H, _, K = phi.shape
        n = codes.shape[0]
        use = cond[None, :] & (codes >= 0)  # [n, p]
        qcol = self._box_column_logmass(phi)  # [H, B, p, K]
        rows = np.maximum(codes, 0) + self.offsets[None, :]
        out = np.full((H, n, K), -np.inf)
        for b, box in enumerate(self.boxes):
            compat = np.where(use, box[rows], True).all(axis=1)
            idx = np.flatnonzero(compat)
            if idx.size == 0:
                continue
            acc = np.broadcast_to(qcol[:, b, None, :, :].sum(axis=2), (H, idx.size, K)).copy()
            for j in np.flatnonzero(cond):
                sel = use[idx, j]
                if not sel.any():
                    continue
                ii = idx[sel]
                acc[:, sel, :] += lp[:, rows[ii, j], :] - qcol[:, b, None, j, :]
            out[:, idx, :] = np.logaddexp(out[:, idx, :], acc)
        return out

    def counts_in_zeros(
        self, count: int, phi: np.ndarray, log_pi: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Class sizes ``[K]`` and level counts ``[L, K]`` of ``count`` records of the
        unrestricted model conditioned on ``y ∈ S`` (one draw: ``phi[L, K]``, ``log_pi[K]``),
        drawn as multinomial counts per (box, class) and level: a cost independent of ``count``.
        """
        B, K = len(self.boxes), phi.shape[1]
        nk = np.zeros(K, dtype=np.int64)
        c = np.zeros((self.L, K))
        if count == 0 or B == 0:
            return nk, c
        q = self._box_column_logmass(phi[None])[0].sum(axis=1) + log_pi[None, :]  # [B, K]
        w = np.exp(q - q.max()).ravel()
        n_bk = rng.multinomial(count, w / w.sum()).reshape(B, K)
        nk += n_bk.sum(axis=0)
        bb, kk = np.nonzero(n_bk)
        m = n_bk[bb, kk]
        for a, dj in zip(self.offsets, self.d, strict=True):
            pv = phi[a : a + dj, :].T[kk] * self.boxes[bb, a : a + dj]  # [pairs, dj]
            pv /= pv.sum(axis=1, keepdims=True)
            lv = rng.multinomial(m, pv)  # [pairs, dj]
            np.add.at(c[a : a + dj, :].T, kk, lv)
        return nk, c


class Augmentation:
    """Per-chain state of the truncated-multinomial data augmentation (Gibbs sampler).

    Holds the class sizes and level counts of the records the unrestricted model generated
    inside ``S`` (Manrique-Vallier & Reiter 2014, §3).
    """

    def __init__(self, zeros: StructuralZeros, codes: np.ndarray):
        self.zeros = zeros
        self.codes = codes
        self.incomplete = np.flatnonzero((codes < 0).any(axis=1))
        self.nk0: np.ndarray | None = None
        self.c0: np.ndarray | None = None
        self.n0 = 0

    def class_sizes(self, K: int) -> np.ndarray:
        """Counts of the augmented records per class."""
        return np.zeros(K, dtype=np.int64) if self.nk0 is None else self.nk0

    def relabel(self, new_label: np.ndarray) -> None:
        """Apply a label permutation (label-switching moves): class ``k`` becomes
        ``new_label[k]``."""
        if self.nk0 is None:
            return
        nk0, c0 = np.empty_like(self.nk0), np.empty_like(self.c0)
        nk0[new_label] = self.nk0
        c0[:, new_label] = self.c0
        self.nk0, self.c0 = nk0, c0

    def add_counts(self, nk: np.ndarray, c: np.ndarray, offsets: np.ndarray) -> None:
        """Add the augmented records to class sizes ``nk`` and level counts ``c[L, K]``."""
        if self.nk0 is not None:
            nk += self.nk0
            c += self.c0

    def init_imputations(self, y: np.ndarray, rng: np.random.Generator) -> None:
        """Redraw uniform starting imputations that fell in ``S``."""
        d = self.zeros.d
        bad = self.incomplete[self.zeros.contains(y[self.incomplete])]
        for _ in range(MAX_REJECTION_ROUNDS):
            if bad.size == 0:
                return
            miss = self.codes[bad] < 0
            draw = np.floor(rng.random(miss.shape) * d[None, :]).astype(np.int64)
            y[bad] = np.where(miss, draw, self.codes[bad])
            bad = bad[self.zeros.contains(y[bad])]
        raise ValidationError("structural_zeros: no allowed completion found for a record.",
                              code="NO_ALLOWED_CELL")

    def step(
        self, y: np.ndarray, z: np.ndarray, phi: np.ndarray, log_pi: np.ndarray,
        rng: np.random.Generator,
    ) -> float:
        """After the class step at Θ: fix imputations in ``S``, draw the augmented records.

        Imputed records in ``S`` are redrawn until allowed (rejection), then
        ``n0 ~ NegBin(n, 1 − P(S | Θ))`` records in ``S``. Returns ``log(1 − P(S | Θ))``.
        """
        zs = self.zeros
        logphi = np.log(phi)
        bad = self.incomplete[zs.contains(y[self.incomplete])]
        for r in range(MAX_REJECTION_ROUNDS):
            if r == _FEW_ROUNDS and bad.size:  # low acceptance: exact draws by enumeration
                bad = self._enumerate(bad, y, z, logphi, log_pi, rng)
            if bad.size == 0:
                break
            cb = self.codes[bad]
            logw = np.broadcast_to(log_pi, (bad.size, log_pi.size)).copy()
            for j, a in enumerate(zs.offsets):
                ok = cb[:, j] >= 0
                logw[ok] += logphi[a + cb[ok, j], :]
            w = np.exp(logw - logw.max(axis=1, keepdims=True))
            zb = inverse_cdf(w, rng)
            z[bad] = zb
            for j, (a, dj) in enumerate(zip(zs.offsets, zs.d, strict=True)):
                miss = cb[:, j] < 0
                if miss.any():
                    y[bad[miss], j] = inverse_cdf(phi[a : a + dj, :].T[zb[miss]], rng)
            bad = bad[zs.contains(y[bad])]
        else:
            raise ValidationError(
                "structural_zeros: the imputation of a record's missing values keeps falling in "
                "the structural zeros (its observed values leave almost no allowed completion).",
                code="NO_ALLOWED_CELL"
            )
        log_ps = float(zs.log_mass(phi[None], log_pi[None])[0])
        p_allowed = -np.expm1(log_ps)
        n = self.codes.shape[0]
        self.n0 = int(rng.negative_binomial(n, max(p_allowed, 1e-12))) if p_allowed < 1 else 0
        self.nk0, self.c0 = zs.counts_in_zeros(self.n0, phi, log_pi, rng)
        return float(np.log1p(-min(np.exp(log_ps), 1.0)))


    def _enumerate(self, rows, y, z, logphi, log_pi, rng) -> np.ndarray:
        """Draw ``(z_i, y_i,mis)`` from the truncated conditional by listing the allowed
        completions (records with at most ``_MAX_COMPLETIONS``); returns the rows left to the
        rejection sampler."""
        zs = self.zeros
        left = []
        for i in rows:
            c = self.codes[i]
            mis = np.flatnonzero(c < 0)
            if np.prod(zs.d[mis].astype(np.float64)) > _MAX_COMPLETIONS:
                left.append(i)
                continue
            grid = np.stack(np.meshgrid(*[np.arange(zs.d[j]) for j in mis], indexing="ij"),
                            axis=-1).reshape(-1, mis.size)
            full = np.repeat(c[None, :], len(grid), axis=0)
            full[:, mis] = grid
            ok = ~zs.contains(full)
            full = full[ok]
            lw = np.broadcast_to(log_pi, (len(full), log_pi.size)).copy()  # [C, K]
            for j, a in enumerate(zs.offsets):
                lw += logphi[a + full[:, j], :]
            w = np.exp(lw - lw.max()).ravel()
            pick = int(inverse_cdf(w[None, :], rng)[0])
            y[i], z[i] = full[pick // log_pi.size], pick % log_pi.size
        return np.asarray(left, dtype=np.int64)


def inverse_cdf(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row of non-negative weights ``w[n, d]`` (one uniform per row)."""
    cum = np.cumsum(w, axis=1)
    u = rng.random(w.shape[0]) * cum[:, -1]
    return np.minimum((cum <= u[:, None]).sum(axis=1), w.shape[1] - 1)


def _level_code(value: Any, levels: Sequence[Any]) -> int | None:
    """Position of ``value`` among ``levels``: equal after normalisation, or as text (a CSV
    table of zeros holds ``"1"`` for the integer level 1)."""
    v = normalise_level(value)
    for k, lv in enumerate(levels):
        if normalise_level(lv) == v:
            return k
    text = str(v).strip()
    for k, lv in enumerate(levels):
        if str(normalise_level(lv)).strip() == text:
            return k
    try:
        num = float(text)
    except ValueError:
        return None
    for k, lv in enumerate(levels):
        try:
            if float(normalise_level(lv)) == num:
                return k
        except (TypeError, ValueError):
            continue
    return None


def for_schema(obj: Any, schema: Any, synthesis_mode: str) -> StructuralZeros | None:
    """The structural zeros of a DPMPM setting ``structural_zeros`` for the fitted schema.

    Raises
    ------
    ValidationError
        ``marginal`` synthesis with unsynthesized columns (it could release an impossible
        combination).
    """
    if obj is None:
        return None
    zeros = StructuralZeros(read_structural_zeros(obj), schema.names,
                            [c.levels for c in schema])
    if synthesis_mode == "marginal" and schema.unsynthesized:
        raise ValidationError(
            "structural_zeros with unsynthesized columns need synthesis_mode='conditional_us' "
            "or 'posterior_class': 'marginal' draws the synthesized columns without the "
            "record's unsynthesized values and could release an impossible combination."
        )
    return zeros


def pymc_log_allowed(zeros: StructuralZeros, log_pi: Any, log_phis: Sequence[Any]) -> Any:
    """``log(1 − P(S | Θ))`` as a PyTensor expression (the PyMC model's normaliser).

    ``log_pi``: ``[K]``; ``log_phis[j]``: ``[K, d_j]``.
    """
    import pytensor.tensor as pt

    mass = pt.exp(log_pi)[:, None]  # [K, 1] * [K, B]
    for j, (a, dj) in enumerate(zip(zeros.offsets, zeros.d, strict=True)):
        free = zeros.wild[:, j].astype(np.float64)  # [B]: 1 where box b leaves column j free
        if free.all():
            continue
        m = zeros.boxes[:, a : a + dj].T.astype(np.float64)  # [dj, B]
        # a free column contributes exactly 1 (not Σ φ, which rounds)
        mass = mass * (pt.dot(pt.exp(log_phis[j]), m) * (1.0 - free) + free)
    return pt.log1p(-pt.sum(mass))
