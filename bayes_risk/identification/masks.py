"""Match masks: many subsets of the known columns matched at once for the knowledge sweep
(bitsets per column, ``AND``-ed along the lattice; the engine's counts bit for bit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bayes_risk._memory import working_bytes
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.index import _order_keys, target_bounds
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.problem import Prepared

__all__ = ["MAX_RECORDS", "BUDGET_BYTES", "COMPILED_MIN_WORDS", "usable", "use_compiled",
           "subset_matches"]

#: records up to which the knowledge sweep matches with masks
MAX_RECORDS = 20_000
#: memory of the masks held at once (the columns', the lattice path's) at most, or a quarter of
#: what the memory budget leaves; targets are chunked
BUDGET_BYTES = 256 * 2**20

#: words of masks combined from which the compiled kernel repays importing numba
COMPILED_MIN_WORDS = 50_000_000

_ONE = np.uint64(1)


def usable(prep: Prepared, rule: MatchRule) -> bool:
    """Whether masks reproduce the engine: a rectangular rule, at most :data:`MAX_RECORDS`
    records; when rows were removed after synthesis, every known column synthesized (as the
    release's reading requires: each dataset's mask of its released rows is in every column's)."""
    return (rule.shape == "rectangle" and 0 < prep.n <= MAX_RECORDS
            and (prep.released is None or not (rule.exact_us or rule.radius_us)))


def _words(n: int) -> int:
    return (n + 63) // 64


def _bit(i: np.ndarray) -> np.ndarray:
    return np.left_shift(_ONE, (i & 63).astype(np.uint64))


def _bits(rows: np.ndarray, n: int) -> np.ndarray:
    """The mask of the records ``rows``."""
    out = np.zeros(_words(n), dtype=np.uint64)
    np.bitwise_or.at(out, rows >> 6, _bit(rows))
    return out


def _ones(n: int) -> np.ndarray:
    """The mask of every record (the padding bits of the last word clear)."""
    row = np.full(_words(n), np.iinfo(np.uint64).max, dtype=np.uint64)
    if n % 64:
        row[-1] = (_ONE << np.uint64(n % 64)) - _ONE
    return row


def _exact(rec_codes: np.ndarray, tgt_codes: np.ndarray, n: int) -> np.ndarray:
    """``[n_t, W]``: the records whose code equals the target's (none for code ``-1``)."""
    levels, inv = np.unique(rec_codes, return_inverse=True)
    table = np.zeros((len(levels) + 1, _words(n)), dtype=np.uint64)  # last row: no record
    i = np.arange(n)
    np.bitwise_or.at(table, (inv.ravel(), i >> 6), _bit(i))
    pos = np.minimum(np.searchsorted(levels, tgt_codes), len(levels) - 1)
    row = np.where((tgt_codes >= 0) & (levels[pos] == tgt_codes), pos, len(levels))
    return table[row]


def _prefix(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted order keys and ``P[k]``, the bitset of the first ``k`` records in that order:
    a window's records are ``P[e] ^ P[s]``."""
    n = len(vals)
    keys = _order_keys(vals)
    order = np.argsort(keys, kind="stable")
    P = np.zeros((n + 1, _words(n)), dtype=np.uint64)
    P[np.arange(1, n + 1), order >> 6] = _bit(order)
    np.bitwise_or.accumulate(P, axis=0, out=P)
    return keys[order], P


def _radius(prefix: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray
            ) -> np.ndarray:
    """``[n_t, W]``: the records whose value lies in ``[lo, hi]``, as the engine's index."""
    sk, P = prefix
    s = np.searchsorted(sk, _order_keys(lo), side="left")
    e = np.maximum(np.searchsorted(sk, _order_keys(hi), side="right"), s)
    return np.bitwise_xor(P[e], P[s])


def _program(todo: Sequence[tuple[int, ...]], wanted: set[tuple[int, ...]]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The depth-first program over the sorted subsets ``todo``: per step the column, the
    level and the output row (``-1``: a prefix, or a subset not ``wanted``)."""
    col: list[int] = []
    level: list[int] = []
    out: list[int] = []
    path: tuple[int, ...] = ()
    for i, k in enumerate(todo):
        if k not in wanted:
            continue
        common = 0
        while common < min(len(path), len(k)) and path[common] == k[common]:
            common += 1
        for d in range(common, len(k)):
            col.append(k[d])
            level.append(d)
            out.append(i if d == len(k) - 1 else -1)
        path = k
    return (np.asarray(col, dtype=np.int64), np.asarray(level, dtype=np.int64),
            np.asarray(out, dtype=np.int64))


def _lattice_counts(masks: np.ndarray, col: np.ndarray, level: np.ndarray, out: np.ndarray,
                    rec: np.ndarray, r: int, counts: np.ndarray, own: np.ndarray) -> None:
    """Pure-numpy twin of the compiled ``lattice_counts``."""
    stack: list[np.ndarray] = []
    ok = rec >= 0
    k = np.where(ok, rec, 0)
    rows = np.arange(len(k))
    shift = (k & 63).astype(np.uint64)
    for c, lv, o in zip(col.tolist(), level.tolist(), out.tolist(), strict=True):
        del stack[lv:]
        stack.append(masks[c] if lv == 0 else np.bitwise_and(stack[lv - 1], masks[c]))
        if o >= 0:
            m = stack[lv]
            counts[o, :, r] = np.bitwise_count(m).sum(axis=1, dtype=np.int64)
            own[o, :, r] = ok & ((np.right_shift(m[rows, k >> 6], shift) & _ONE) == _ONE)


def use_compiled(words: int) -> bool:
    """Whether combining ``words`` words of masks runs on the compiled kernel (same counts)."""
    return _engine.numba_for(words, COMPILED_MIN_WORDS)


def subset_matches(prep: Prepared, rule: MatchRule, subsets: Sequence[Sequence[str]]
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Match counts and own-record flags ``[N_T, R]`` of each of ``subsets`` (non-empty, each
    listed once: the sweep's lattice evaluates each subset once, the empty one without masks)
    of the rule's columns, as separate engine runs would give them."""
    cols_us = list(rule.exact_us) + list(rule.radius_us)
    cols = cols_us + list(rule.exact_s) + list(rule.radius_s)
    pos = {c: i for i, c in enumerate(cols)}
    n_us = len(cols_us)
    keys = [tuple(sorted(pos[c] for c in s)) for s in subsets]
    todo = sorted(keys)
    N, R = prep.n_targets, prep.R
    counts = np.zeros((len(todo), N, R), dtype=np.int64)
    own = np.zeros((len(todo), N, R), dtype=bool)
    if N and todo:
        _fill(prep, rule, cols, n_us, todo, counts, own)
    row = {k: i for i, k in enumerate(todo)}
    return [(counts[row[k]], own[row[k]]) for k in keys]


def _fill(prep: Prepared, rule: MatchRule, cols: list[str], n_us: int,
          todo: list[tuple[int, ...]], counts: np.ndarray, own: np.ndarray) -> None:
    N, R, n = prep.n_targets, prep.R, prep.n
    W = _words(n)
    b = target_bounds(prep, rule)
    exact_cols, radius_cols = list(rule.exact_cols), list(rule.radius_cols)
    drop = prep.tgt_drop
    ones = _ones(n)
    # a subset of unsynthesized columns is counted in the first replicate, then repeated
    us_only = {k for k in todo if k[-1] < n_us}
    first = _program(todo, set(todo))
    later = _program(todo, set(todo) - us_only)
    steps = len(first[0]) + (R - 1) * len(later[0])
    compiled = use_compiled(steps * N * W)
    if compiled:
        from bayes_risk.identification._kernels import lattice_counts as kern
    else:
        kern = _lattice_counts
    # per target: every column's mask (the chunk's), and the numpy twin's masks per level
    depth = max(len(k) for k in todo)
    # targets per chunk: the fast size, or what the memory budget leaves (--memory)
    chunk = max(1, working_bytes(BUDGET_BYTES) // (W * 8 * (len(cols) + (0 if compiled
                                                                           else depth))))
    us_prefix = {c: _prefix(prep.rec_radius_us[j]) for j, c in enumerate(rule.radius_us)}

    def column(c: str, r: int, a: int, z: int, prefix: dict, kept: np.ndarray | None
               ) -> np.ndarray:
        if c in rule.radius_us or c in rule.radius_s:
            j = radius_cols.index(c)
            m = _radius(prefix[c], b.lo[a:z, j], b.hi[a:z, j])
            d = len(exact_cols) + j
        else:
            j = exact_cols.index(c)
            rec_codes = prep.rec_exact_us[:, j] if c in rule.exact_us \
                else prep.rep_exact_s[r][:, rule.exact_s.index(c)]
            m = _exact(rec_codes, prep.tgt_exact[a:z, j], n)
            d = j
        if drop is not None and drop[a:z, d].any():
            m[drop[a:z, d]] = ones  # not matched on a missing value: every record
        if kept is not None:  # a record whose row this dataset removed matches no target
            np.bitwise_and(m, kept, out=m)
        return m

    for a in range(0, N, chunk):
        z = min(N, a + chunk)
        rec = np.ascontiguousarray(prep.rec[a:z], dtype=np.int64)
        masks = np.empty((len(cols), z - a, W), dtype=np.uint64)
        for i, c in enumerate(cols[:n_us]):
            masks[i] = column(c, 0, a, z, us_prefix, None)
        cnt = counts[:, a:z]
        flag = own[:, a:z]
        for r in range(R):
            prefix = {c: _prefix(prep.rep_radius_s[r][j]) for j, c in enumerate(rule.radius_s)}
            kept = None if prep.released is None else _bits(np.flatnonzero(prep.released[r]), n)
            for i in range(n_us, len(cols)):
                masks[i] = column(cols[i], r, a, z, prefix, kept)
            col, level, out = first if r == 0 else later
            kern(masks, col, level, out, rec, r, cnt, flag)
    for k in us_only:
        i = todo.index(k)
        counts[i, :, 1:] = counts[i, :, :1]
        own[i, :, 1:] = own[i, :, :1]
