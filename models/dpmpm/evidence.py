"""The marginal likelihood of the region of partitions a DPMPM chain holds: bounds from the
partition posterior (:doc:`/methods/models`, DPMPM regimes).

A chain that holds a metastable regime samples the posterior restricted to it, ``p_R(P) =
p(P, y) / Z_R`` over the partitions ``P`` of the records into classes (the class parameters, the
sticks, α and the missing entries integrated out). For any such distribution

    log Z_R = E_R[log p(P, y)] + H(p_R),

and the entropy is bounded on both sides by what a collapsed Gibbs chain in ``R`` sees:

* below, by ``Σ_i E_R[H_i]``, ``H_i`` the entropy of record ``i``'s relation to the records
  before it (which of their classes it joins, or none of them) given the partition of all the
  others: the chain rule over the records in order, each term conditioned on more. (The
  entropy of the record's class given the others, over every class, is no bound: a class
  holding only later records would be counted twice.)
* above, by the cross-entropy ``-E_R[log q(S)]`` of the class labels ``S`` the chain keeps (a
  new class opens at the first free label), whose entropy is at least the partition's; ``q``
  is the product of each record's Rao–Blackwellised label frequencies over the first half of
  the measured sweeps, evaluated (Rao–Blackwellised again) over the second half.

The partition prior is that of the Dirichlet process (the Ewens formula), with α integrated
against its Gamma prior by quadrature: the truncated stick breaking of the model gives the same
partitions up to a total variation of at most ``n (α / (1 + α))^(K − 1)`` (3·10⁻⁶ for
``n = 20,000``, ``K = 80``, ``α = 3``). A regime whose lower bound exceeds another's upper bound
carries at least ``1 / (1 + e^(upper − lower))`` of the mass of the two regions (regions no
chain visited are in neither).

Both bounds are expectations under ``p_R``: they hold for a chain at rest in its region, not
for one still moving (a chain that has not reached its region's typical partitions sees other
full conditionals, and ``Σ_i E[H_i]`` can exceed the entropy). The pass therefore checks that
``log p(P, y)`` and both entropy terms are stationary over the measured sweeps (the change of
each mean between the halves, within ``DRIFT_Z`` standard errors), extends itself up to
``EXTENSIONS`` times when they are not, and reports the chain as not at rest otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

from bayes_risk.models._bayesian.generator import generator_handle, generator_of
from bayes_risk.models._bayesian.regimes import DRIFT_Z

__all__ = ["EVIDENCE_SWEEPS", "DRIFT_Z", "EXTENSIONS", "alpha_log_integrals",
           "classes_given_draw", "partition_evidence",
           "record_regime_evidence"]

#: collapsed Gibbs sweeps of the evidence pass: warm-up, the first half (the frequencies of
#: ``q``), the second half (the bounds). On NYexample's default fit (20,000 × 10) the regimes'
#: bounds are 496 nats apart, at 5.8 and 10.8 s of CPU for the chains at 12 and 29 classes
EVIDENCE_SWEEPS = (100, 300, 300)
#: pseudo-count added to each record's class frequencies in ``q`` (all classes together)
_PSEUDO = 0.05
#: appended to the fit's seeds for the pass's own random numbers
_STREAM = 72
#: batches of the second half for the Monte Carlo errors of the bounds (batch means)
_BATCHES = 10
#: times the pass repeats its two measured phases (the sweeps before serving as warm-up) while
#: a term still drifts
EXTENSIONS = 2


def alpha_log_integrals(n: int, k_max: int, a_alpha: float, b_alpha: float) -> np.ndarray:
    """``log ∫ α^k Γ(α) / Γ(α + n) Gamma(α; a_α, b_α) dα`` for ``k = 0 .. k_max``.

    The Ewens partition probability with α integrated out is ``exp(out[k]) Π_b Γ(n_b)`` for a
    partition of ``n`` records into ``k`` blocks of sizes ``n_b``. Trapezoid rule in ``t = log α``
    on a grid whose ends hold below ``e^-40`` of every integrand (checked); ``out[0]`` (no
    class: diverges) is set to 0.

    Examples
    --------
    >>> import math
    >>> li = alpha_log_integrals(2, 2, 1.0, 1.0)  # n = 2: k = 1 (together) or 2 (apart)
    >>> round(math.exp(li[1]) * math.gamma(2) + math.exp(li[2]), 10)  # the two partitions
    1.0
    """
    from scipy.special import gammaln, logsumexp

    t = np.linspace(-250.0, 15.0, 26_501)
    al = np.exp(t)
    base = (gammaln(al) - gammaln(al + n) + a_alpha * math.log(b_alpha) - gammaln(a_alpha)
            + a_alpha * t - b_alpha * al)  # a_α t: (a_α − 1) t of the density + t of dα = α dt
    k = np.arange(k_max + 1)[:, None]
    f = base[None, :] + k * t[None, :]
    w = np.full(t.size, t[1] - t[0])
    w[[0, -1]] *= 0.5
    out = logsumexp(f, b=w[None, :], axis=1)
    ends = np.maximum(f[1:, 0], f[1:, -1]) - out[1:]
    if not np.all(ends < -40.0):  # pragma: no cover - a prior far outside the grid
        raise ValueError("alpha_log_integrals: the α prior puts mass outside e^-250 .. e^15")
    out[0] = 0.0  # no classes: only one record, alone (its new class is its only choice)
    return out


@njit(cache=True, nogil=True, inline="always")
def _move(codes, i, b, sign, offsets, nb, cnt, nbj, num, inv, da):  # pragma: no cover - numba
    """Record ``i`` into (``sign = 1``) or out of (``-1``) the class in slot ``b``."""
    nb[b] += sign
    for j in range(codes.shape[1]):
        c = codes[i, j]
        if c >= 0:
            row = offsets[j] + c
            cnt[b, row] += sign
            num[b, row] += sign
            nbj[b, j] += sign
            inv[b, j] = 1.0 / (da[j] + nbj[b, j])


@njit(cache=True, nogil=True, inline="always")
def _relation_terms(w, tot, pn, k, occ, before, lq_i, free):  # pragma: no cover - numba
    """Record ``i``'s terms of phase 2: ``H_i``, the entropy of its relation to the records
    before it in the sweep (the classes holding none of them and a new class are one outcome,
    their total probability), and ``E[-log q_i(slot_i)]`` under its weights ``w[:k] / tot``
    (a new class ``pn``, at slot ``free``)."""
    h = 0.0
    ce = -pn * lq_i[free]
    later = pn
    for t in range(k):
        pt = w[t] / tot
        ce -= pt * lq_i[occ[t]]
        if before[occ[t]] > 0:
            if pt > 0.0:
                h -= pt * math.log(pt)
        else:
            later += pt
    if later > 0.0:
        h -= later * math.log(later)
    return h, ce


@njit(cache=True, nogil=True, inline="always")
def _log_joint(k, p, occ, nb, cnt, nbj, log_i, lga, lgd, lgn):  # pragma: no cover - numba
    """``log p(P, y)`` of the current partition (its ``k`` occupied slots ``occ[:k]``, ``p``
    columns)."""
    lp = log_i[k]
    for t in range(k):
        b = occ[t]
        lp += lgn[nb[b]]
        for j in range(p):
            lp -= lgd[j, nbj[b, j]]
        for r in range(cnt.shape[1]):
            lp += lga[cnt[b, r]]
    return lp


@njit(cache=True, nogil=True)
def _sweeps(codes, offsets, da, slot, nb, cnt, nbj, num, inv, occ, pos, la, ld, lga, lgd, lgn,
            log_i, log_new, sweeps, phase, q, lq, rows, handle):  # pragma: no cover - numba
    """``sweeps`` collapsed Gibbs sweeps of the Ewens partition posterior (records in data
    order; a new class opens at the first free slot). ``phase`` 0: warm-up; 1: add each
    record's probabilities of the slots to ``q``; 2: write per sweep ``rows[s] = (log p(P, y),
    Σ_i H_i, Σ_i E[-log q_i(slot_i)], k)``, ``H_i`` the entropy of record ``i``'s relation to
    the records before it. Returns 0, or -1 when a new class finds no free slot.

    Weights in probability space, ``n_b Π_j (a + c_bj) / (d_j a + n_bj)`` over the observed
    columns (``num``, ``inv``), in log space where that product underflows."""
    rng = generator_of(handle)
    n, p = codes.shape
    S = nb.shape[0]
    w = np.empty(S)
    before = np.zeros(S, dtype=np.int64)
    orow = np.empty(p, dtype=np.int64)
    ocol = np.empty(p, dtype=np.int64)
    for s in range(sweeps):
        k = 0
        free = -1  # where a new class opens: the first free slot (-1: none)
        for b in range(S - 1, -1, -1):
            if nb[b] > 0:
                k += 1
            else:
                free = b
        h_sum = 0.0
        ce_sum = 0.0
        before[:] = 0  # members of each slot among the records visited in this sweep
        for i in range(n):
            b0 = slot[i]
            _move(codes, i, b0, -1, offsets, nb, cnt, nbj, num, inv, da)
            if nb[b0] == 0:  # the class is gone: its slot leaves the occupied list
                k -= 1
                last = occ[k]
                occ[pos[b0]] = last
                pos[last] = pos[b0]
                if free < 0 or b0 < free:
                    free = b0
            lwn = log_i[k + 1] - log_i[k] + log_new[i]  # a new class: prior ratio × Π 1/d_j
            wn = math.exp(lwn)
            tot = wn
            no = 0  # the record's observed entries: their rows and columns
            for j in range(p):
                c = codes[i, j]
                if c >= 0:
                    orow[no] = offsets[j] + c
                    ocol[no] = j
                    no += 1
            for t in range(k):
                b = occ[t]
                v = float(nb[b])
                for m in range(no):
                    v *= num[b, orow[m]] * inv[b, ocol[m]]
                w[t] = v
                tot += v
            if not tot > 1e-280:  # underflow: the same weights from logs, rescaled
                mx = lwn
                for t in range(k):
                    b = occ[t]
                    v = math.log(nb[b])
                    for j in range(p):
                        c = codes[i, j]
                        if c >= 0:
                            v += la[cnt[b, offsets[j] + c]] - ld[j, nbj[b, j]]
                    w[t] = v
                    mx = max(mx, v)
                wn = math.exp(lwn - mx)
                tot = wn
                for t in range(k):
                    w[t] = math.exp(w[t] - mx)
                    tot += w[t]
            if free < 0:
                return -1
            u = rng.random() * tot
            acc = 0.0
            new = -1  # index into occ, or -1: a new class
            for t in range(k):
                acc += w[t]
                if u < acc:
                    new = t
                    break
            pn = wn / tot
            if phase == 1:
                for t in range(k):
                    q[i, occ[t]] += w[t] / tot
                q[i, free] += pn
            elif phase == 2:
                h, ce = _relation_terms(w, tot, pn, k, occ, before, lq[i], free)
                h_sum += h
                ce_sum += ce
            if new >= 0:
                b1 = occ[new]
            else:
                b1 = free
                occ[k] = b1
                pos[b1] = k
                k += 1
                free = -1
                for b in range(b1 + 1, S):
                    if nb[b] == 0:
                        free = b
                        break
            slot[i] = b1
            before[b1] += 1
            _move(codes, i, b1, 1, offsets, nb, cnt, nbj, num, inv, da)
        if phase == 2:
            rows[s, 0] = _log_joint(k, p, occ, nb, cnt, nbj, log_i, lga, lgd, lgn)
            rows[s, 1] = h_sum
            rows[s, 2] = ce_sum
            rows[s, 3] = k
    return 0


def classes_given_draw(codes: np.ndarray, offsets: np.ndarray, log_pi: np.ndarray,
                       logphi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Classes ``z [n]`` drawn from ``p(z_i | π, φ, y_i,obs)`` (missing entries marginalised):
    a draw of the partition from the regime of the posterior draw ``(π, φ)`` (``logphi [L, K]``)."""
    w = np.broadcast_to(log_pi, (codes.shape[0], log_pi.shape[0])).copy()
    for j in range(codes.shape[1]):
        c = codes[:, j]
        obs = c >= 0
        w[obs] += logphi[offsets[j] + c[obs]]
    w = np.exp(w - w.max(axis=1, keepdims=True))
    cum = np.cumsum(w, axis=1)
    u = rng.random(codes.shape[0]) * cum[:, -1]
    return np.minimum((cum < u[:, None]).sum(axis=1), log_pi.shape[0] - 1).astype(np.int64)


def partition_evidence(codes: np.ndarray, d: Sequence[int], z: np.ndarray, *,
                       alpha_prior: tuple[float, float], dirichlet_prior: float,
                       sweeps: Sequence[int] = EVIDENCE_SWEEPS, random_seed: Any = None,
                       extensions: int = EXTENSIONS) -> dict[str, Any]:
    """Bounds of ``log Z_R``, the marginal likelihood of the region of partitions a collapsed
    Gibbs chain started at ``z`` holds (module docstring).

    Parameters
    ----------
    codes : int array [n, p]
        Level codes, ``-1`` missing (integrated out).
    d : sequence of int
        Levels of each column.
    z : int array [n]
        Starting classes (any labels).
    alpha_prior : (float, float)
        Shape and rate of the Gamma prior of α.
    dirichlet_prior : float
        Dirichlet parameter of the category probabilities.
    sweeps : (int, int, int)
        Warm-up sweeps, sweeps of the first half, sweeps of the second half.
    random_seed : int, Generator or None
        Seed of the chain.
    extensions : int
        Times the two measured phases are run again while a term drifts (``EXTENSIONS``).

    Returns
    -------
    dict
        ``lower``, ``upper`` (the bounds of ``log Z_R``), ``lower_se``, ``upper_se`` (their Monte
        Carlo errors, batch means over the second half), ``drift`` (the change of the means of
        ``log p(P, y)``, ``Σ_i H_i`` and ``-log q(S)`` from the first half of the measured
        sweeps to the second, in standard errors: ``log_joint``, ``entropy_lower``,
        ``entropy_upper``), ``stationary`` (every drift within ``DRIFT_Z``: the premise of both
        bounds, which hold for a chain at rest in its region), ``log_joint``
        (``E_R[log p(P, y)]``), ``entropy_lower``, ``entropy_upper``, ``k_mean`` (mean number
        of classes), ``sweeps`` (warm-up including the extensions' earlier rounds, first half,
        second half); ``None`` values with ``reason`` when the chain needed more class slots
        than it has.
    """
    from scipy.special import gammaln

    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n, p = codes.shape
    d = np.asarray(d, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    L = int(d.sum())
    a = float(dirichlet_prior)
    warm, first, second = (int(s) for s in sweeps)
    rng = random_seed if isinstance(random_seed, np.random.Generator) else (
        np.random.default_rng(random_seed))
    _, slot = np.unique(np.asarray(z), return_inverse=True)
    slot = slot.astype(np.int64)
    k0 = int(slot.max()) + 1
    S = 2 * k0 + 32  # slots for classes born in the pass
    nb = np.bincount(slot, minlength=S).astype(np.int64)
    cnt = np.zeros((S, L), dtype=np.int64)
    nbj = np.zeros((S, p), dtype=np.int64)
    for j in range(p):
        obs = codes[:, j] >= 0
        np.add.at(cnt, (slot[obs], offsets[j] + codes[obs, j]), 1)
        np.add.at(nbj, (slot[obs], j), 1)
    occ = np.zeros(S, dtype=np.int64)
    occ[:k0] = np.arange(k0)
    pos = np.arange(S, dtype=np.int64)
    x = np.arange(n + 1, dtype=np.float64)
    la = np.log(a + x)
    ld = np.log(d[:, None] * a + x[None, :])
    lga = gammaln(a + x) - gammaln(a)
    lgd = gammaln(d[:, None] * a + x[None, :]) - gammaln(d[:, None] * a)
    lgn = gammaln(np.maximum(x, 1.0))
    log_i = alpha_log_integrals(n, S + 1, *(float(v) for v in alpha_prior))
    log_new = -((codes >= 0) * np.log(d)[None, :]).sum(axis=1)  # Σ_j log(1 / d_j), observed
    da = d * a
    num = a + cnt.astype(np.float64)
    inv = 1.0 / (da[None, :] + nbj)
    q = np.zeros((n, S), dtype=np.float64)  # the label frequencies, then log q in place
    rows = np.zeros((max(second, 1), 4))
    handle = generator_handle(rng)
    args = (codes, offsets, da.astype(np.float64), slot, nb, cnt, nbj, num, inv, occ, pos, la, ld,
            lga, lgd, lgn, log_i, log_new)
    status = _sweeps(*args, warm, 0, q, q, rows, handle)
    drift: dict[str, float] = {}
    for attempt in range(int(extensions) + 1):
        if attempt:  # the round before, still moving, was warm-up
            warm += first + second
            q[:] = 0.0
        if status == 0:
            status = _sweeps(*args, first, 1, q, q, rows, handle)
        if status == 0:
            # q_i: the frequencies with a pseudo-count spread over the slots
            q += _PSEUDO / S
            q /= first + _PSEUDO
            np.log(q, out=q)
            status = _sweeps(*args, second, 2, np.zeros((1, 1)), q, rows, handle)
        if status != 0:
            return {"lower": None, "upper": None, "lower_se": None, "upper_se": None,
                    "drift": None, "stationary": None, "log_joint": None,
                    "entropy_lower": None, "entropy_upper": None, "k_mean": None,
                    "sweeps": [warm, first, second],
                    "reason": f"the chain opened more than {S} classes"}
        drift = {name: _drift(x) for name, x in zip(("log_joint", "entropy_lower",
                                                     "entropy_upper"), rows.T[:3], strict=True)}
        if all(abs(v) <= DRIFT_Z for v in drift.values()):
            break
    lp, h, ce, k = rows.T
    lower, lower_se = _batch_mean(lp + h)
    upper, upper_se = _batch_mean(lp + ce)
    return {"lower": lower, "upper": upper, "lower_se": lower_se, "upper_se": upper_se,
            "drift": drift, "stationary": all(abs(v) <= DRIFT_Z for v in drift.values()),
            "log_joint": float(lp.mean()), "entropy_lower": float(h.mean()),
            "entropy_upper": float(ce.mean()), "k_mean": float(k.mean()),
            "sweeps": [warm, first, second], "reason": None}


def _drift(x: np.ndarray) -> float:
    """The change of the mean of ``x`` from its first half to its second, in standard errors
    (batch means of each half): a chain still moving through its region has a large one;
    ``inf`` when the halves are too short to tell (fewer than 4 sweeps each)."""
    h = x.size // 2
    if h < 4:
        return float("inf")
    (a, sa), (b, sb) = _batch_mean(x[:h]), _batch_mean(x[h:2 * h])
    return float((b - a) / math.hypot(sa, sb)) if sa > 0 or sb > 0 else 0.0


def _batch_mean(x: np.ndarray) -> tuple[float, float]:
    """Mean of ``x`` and its Monte Carlo standard error by batch means (``_BATCHES`` batches)."""
    b = max(2, min(_BATCHES, x.size // 2))
    m = x[: x.size // b * b].reshape(b, -1).mean(axis=1)
    return float(x.mean()), float(m.std(ddof=1) / math.sqrt(b))


def _last_draw(post: Any, chain: int, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log π [K], log φ [L, K])`` of chain ``chain``'s last kept draw."""
    pi = np.asarray(post["pi"].values[chain, -1], dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_pi = np.log(pi)
        logphi = np.concatenate([np.log(np.asarray(post[f"phi_{j}"].values[chain, -1]).T)
                                 for j in range(d.size)])
    return log_pi, logphi


def record_regime_evidence(tree: Any, codes: np.ndarray, d: Sequence[int], *,
                           alpha_prior: tuple[float, float], dirichlet_prior: float,
                           random_seed: Sequence[int],
                           sweeps: Sequence[int] = EVIDENCE_SWEEPS) -> None:
    """The bounds of each chain's region (:func:`partition_evidence`, started from the classes
    of its last kept draw), written to the posterior group's attributes that
    ``models._bayesian.regimes`` reads (``log_evidence_lower``, ``log_evidence_upper``, their
    standard errors, ``log_evidence_drift`` (the largest drift of the terms, in standard
    errors), ``evidence_classes``, ``evidence_sweeps`` (per chain), ``evidence_reason``);
    ``random_seed``: the fit's seeds of the chains."""
    from bayes_risk.models._bayesian import regimes

    post = tree["posterior"]
    C = int(post.sizes["chain"])
    d = np.asarray(d, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    # a stream of its own: the chains' generators spawn from the seeds alone
    seqs = np.random.SeedSequence([*random_seed, _STREAM]).spawn(C)
    out = []
    for c in range(C):
        rng = np.random.default_rng(seqs[c])
        z = classes_given_draw(codes, offsets, *_last_draw(post, c, d), rng)
        out.append(partition_evidence(codes, d, z, alpha_prior=alpha_prior,
                                      dirichlet_prior=dirichlet_prior, sweeps=sweeps,
                                      random_seed=rng))
    nan = float("nan")
    attrs = post.attrs
    for key, name in ((regimes.BOUNDS_ATTR[0], "lower"), (regimes.BOUNDS_ATTR[1], "upper"),
                      (regimes.BOUNDS_SE_ATTR[0], "lower_se"),
                      (regimes.BOUNDS_SE_ATTR[1], "upper_se"),
                      ("evidence_classes", "k_mean")):
        attrs[key] = [nan if r[name] is None else float(r[name]) for r in out]
    attrs[regimes.DRIFT_ATTR] = [nan if r["drift"] is None else
                                 float(max(abs(v) for v in r["drift"].values())) for r in out]
    attrs["evidence_sweeps"] = [int(s) for r in out for s in r["sweeps"]]
    attrs["evidence_reason"] = "; ".join(f"chain {c + 1}: {r['reason']}"
                                         for c, r in enumerate(out) if r["reason"])
