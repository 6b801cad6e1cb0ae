"""Membership risk against brute force on tiny tables (methods, Membership disclosure risk).

Exact values come from ``tests/_exact.py`` (dynamic programming over class counts, the exact
DPMPM posterior and predictive): for a target ``x`` in slot ``i``,
``A_l(x) = p(x | y_{-i}, Z_(l)) / p(x | y_{-i})`` and
``Λ(x) = Π_l A_l(x) / Σ_{x'} p(x' | y_{-i}) Π_l A_l(x')`` (the sum runs over the four cells of
two binary columns). Replicate runs of the package (fit, augmented fits, estimator; their own
seeds) are compared with the exact posterior membership probability:
``t = (replicate mean − exact) / (sd / √reps)`` per target, bounded by ``_exact.t_bound`` at a
family-wise 1 %, and the mean error must stay below 0.01 on the probability scale.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _exact import check_p_true, dpmpm_exact, t_bound

from bayes_risk.membership import AttackSpec, membership_risk
from bayes_risk.membership.estimator import posterior_membership
from bayes_risk.models import DPMPM, Sampling

D = np.array([2, 2])
K = 2
CELLS = [np.array([a, b]) for a in range(2) for b in range(2)]


def exact_log_lr(y: np.ndarray, datasets: list[np.ndarray], i: int, x: np.ndarray) -> float:
    """Exact ``log Λ(x)`` of a target ``x`` in slot ``i`` (DPMPM, K = 2, two binary columns)."""
    rest = np.delete(y, i, axis=0)
    base = dpmpm_exact(rest, D, K)
    augs = [dpmpm_exact(np.vstack([rest, z]), D, K) for z in datasets]

    def log_a(c: np.ndarray) -> float:
        return float(sum(np.log(a.predictive(c)) - np.log(base.predictive(c)) for a in augs))

    den = np.log(sum(base.predictive(c) * np.exp(log_a(c)) for c in CELLS))
    return log_a(np.asarray(x)) - float(den)


def _tiny() -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(2024)
    y = rng.integers(0, 2, size=(20, 2))
    y[:7, 1] = y[:7, 0]
    datasets = [rng.integers(0, 2, size=(20, 2)) for _ in range(2)]
    hold = np.array([[0, 1], [1, 1]])
    return y, datasets, hold


def _frame(a: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(a, columns=["a", "b"]).astype(str)


def test_exact_normaliser_is_one_for_one_dataset():
    """With m = 1, Σ_x' p(x' | y_{-i}) A(x') = Σ_x' p(x' | y_{-i}, Z) = 1 (the derivation)."""
    y, datasets, _ = _tiny()
    rest = np.delete(y, 3, axis=0)
    base = dpmpm_exact(rest, D, K)
    aug = dpmpm_exact(np.vstack([rest, datasets[0]]), D, K)
    total = sum(base.predictive(c) * aug.predictive(c) / base.predictive(c) for c in CELLS)
    assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("m", [1, 2])
def test_dpmpm_membership_matches_exact(m):
    """Members 0, 7, 12 and two holdout records; 6 replicate fits (tune 300, 2 × 1,500 draws).

    Measured with these seeds: m = 1, |t| ≤ 0.5 and |mean error| ≤ 0.0005; m = 2, |t| ≤ 1.5
    and |mean error| ≤ 0.0022 (the exact values run from 0.39 to 0.63).
    """
    y, datasets, hold = _tiny()
    zf = [_frame(z) for z in datasets[:m]]
    reps = 6
    cache: dict[tuple[int, tuple[int, ...]], float] = {}
    est, truth = [], []
    for r in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DPMPM(n_components=K,
                          sampling=Sampling(tune=300, draws=1500, chains=2, cores=1),
                          progressbar=False).fit(_frame(y), random_seed=500 + r)
            res = membership_risk(model, _frame(y), zf, holdout=_frame(hold),
                                  records=[0, 7, 12], population=0,
                                  random_seed=900 + r,
                                  attack=AttackSpec(bootstrap=0))
        rec = res.records
        assert (rec["flag_codes"] == "").all(), rec
        assert rec["role"].tolist() == ["member"] * 3 + ["non-member"] * 2
        # a non-member's slot is drawn from the run's seed: its exact value is the one of its slot
        row_truth = []
        for s_, role, row in zip(rec["slot"], rec["role"], rec["row"], strict=True):
            x = y[s_] if role == "member" else hold[row]
            key = (int(s_), tuple(int(v) for v in x))
            if key not in cache:
                cache[key] = exact_log_lr(y, datasets[:m], int(s_), x)
            row_truth.append(cache[key])
        truth.append(posterior_membership(np.array(row_truth), 0.5))
        est.append(rec["p_member"].to_numpy())
    err = np.array(est) - np.array(truth)
    # the errors of one target are compared with zero as check_p_true compares estimates
    check_p_true(err, np.zeros(err.shape[1]), 0.01, z_max=t_bound(reps, err.shape[1], 0.01))
