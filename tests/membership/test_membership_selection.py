"""Membership risk of releases that synthesize selected records only, against brute force
(methods, Membership disclosure risk, Releases that synthesize selected records).

The release: 24 records, ``A`` unsynthesized (three levels, one record alone with ``A = 2``),
``B`` synthesized with the categorical family (no covariates, Dirichlet(1) prior: exact
posterior draws), only the records that a rule selects synthesized. The exact likelihood ratio
is enumerated here from the release's likelihood itself, not from the package's factorisation:
for every record ``u`` of the 3 × 3 cells put in slot ``i``,

    L(u) = 1{rule(y_{-i} ∪ {u}) = S}                      (the selection seen, whole table)
           · 1{unselected rows of Z are the data's rows, selected rows carry the data's A}
           · Π_l p(Z_(l)^B of the selected rows | y_{-i} ∪ {u})   (Dirichlet-multinomial)

and ``Λ(x) = L(x) / Σ_u p(u | y_{-i}) L(u)`` with the population model
``p(u | y_{-i}) = p(u_A | y_{-i}) p(u_B | y_{-i})`` (Dirichlet process for ``A``,
Dirichlet-multinomial for ``B``, as the package's). Replicate runs of the package (fit,
refits, estimator; their own seeds) are compared with it as in ``test_membership_seqreg.py``.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from _exact import check_p_true, t_bound
from scipy.special import gammaln

from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.membership import AttackSpec, RatioSpec, membership_risk
from bayes_risk.membership.estimator import posterior_membership
from bayes_risk.models import Sampling, SequentialRegression

REPS = 6
LEVELS = ["0", "1", "2"]
RULE = "B == '2' or A == '2'"  # the records at risk: a rare B, or the rare A


def _rule(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rule on whole columns (the brute force applies it to the whole table)."""
    return (b == 2) | (a == 2)


def _cat(v: np.ndarray) -> pd.Categorical:
    return pd.Categorical(np.asarray(v).astype(str), categories=LEVELS)


def _log_dm_marginal(data_b: np.ndarray, z_b: np.ndarray) -> float:
    """``log p(z | data)``: the synthetic values ``z`` drawn i.i.d. from θ ~ Dirichlet(1 +
    counts of the data)."""
    c = np.bincount(data_b, minlength=3).astype(float)
    z = np.bincount(z_b, minlength=3).astype(float)
    return float(np.sum(gammaln(1 + c + z) - gammaln(1 + c))
                 + gammaln(3 + c.sum()) - gammaln(3 + c.sum() + z.sum()))


def exact_log_lr(ya, yb, sel, zs, i, xa, xb, *, alpha, with_selection=True):
    """``log Λ`` of target ``(xa, xb)`` in slot ``i`` by enumerating the records of slot ``i``
    (module docstring); ``with_selection=False`` leaves the selection factor out."""
    n = len(ya)

    def log_l(ua, ub):
        a, b = ya.copy(), yb.copy()
        a[i], b[i] = ua, ub
        if with_selection and not np.array_equal(_rule(a, b), sel):
            return -np.inf
        out = 0.0
        for za, zb in zs:
            # unselected rows are released whole, selected rows carry their own A
            if not (np.array_equal(za, a) and np.array_equal(zb[~sel], b[~sel])):
                return -np.inf
            out += _log_dm_marginal(b, zb[sel])
        return out

    rest_a, rest_b = np.delete(ya, i), np.delete(yb, i)
    p_a = (np.bincount(rest_a, minlength=3) + alpha / 3) / (n - 1 + alpha)
    p_b = (1.0 + np.bincount(rest_b, minlength=3)) / (3 + n - 1)
    h0 = [np.log(p_a[ua]) + np.log(p_b[ub]) + log_l(ua, ub)
          for ua in range(3) for ub in range(3)]
    top = max(h0)
    log_h0 = top + np.log(np.sum(np.exp(np.array(h0) - top)))
    return float(log_l(xa, xb) - log_h0)


@pytest.fixture(scope="module")
def selected_release():
    rng = np.random.default_rng(7)
    n = 24
    ya = rng.integers(0, 2, n)
    ya[5] = 2
    yb = rng.integers(0, 3, n)
    yb[:8] = (ya[:8] + 1) % 3
    y = pd.DataFrame({"A": _cat(ya), "B": _cat(yb)})
    sel = _rule(ya, yb)

    @functools.cache  # one fit per seed: the module's runs share the fitted models
    def model(seed, draws=3000):
        return SequentialRegression(families={"B": "categorical"}, sampling=Sampling(draws=draws),
                                    progressbar=False).fit(
            y, synthesized=["B"], records=np.flatnonzero(sel), random_seed=seed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = list(model(1).synthesize(2, random_seed=2).datasets)
    hold = pd.DataFrame({"A": _cat([0, 1, 2, 1]), "B": _cat([2, 2, 0, 0])})
    return y, syn, model, ya, yb, sel, hold


def _codes(z: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return z["A"].astype(int).to_numpy(), z["B"].astype(int).to_numpy()


def _runs(release, m, selection, records):
    y, syn, model, *_ , hold = release
    out = []
    for r in range(REPS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = membership_risk(model(500 + r), y, syn[:m], holdout=hold, records=records,
                                  population=0, selection=selection,
                                  random_seed=900 + r,
                                  attack=AttackSpec(bootstrap=0))
        out.append(res)
    return out


@pytest.mark.parametrize("m", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_selection_rule_matches_brute_force(selected_release, m):
    """Members 0, 5 (alone with A = 2), 9 (selected) and 7 (not selected: released whole) and
    four holdout records: the estimate matches the enumeration; the member released whole has
    P = 1 with the flag RELEASED_WHOLE; a non-member the rule would not select is excluded."""
    y, syn, _, ya, yb, sel, hold = selected_release
    assert sel[[0, 5, 9]].all() and not sel[7]
    zs = [_codes(z) for z in syn[:m]]
    runs = _runs(selected_release, m, RULE, [0, 5, 9, 7])
    rec = runs[0].records
    assert rec["flag_codes"].iloc[3] == "RELEASED_WHOLE"
    assert bool(rec["released_whole"].iloc[3]) and rec["p_member"].iloc[3] == 1.0
    assert "MEMBERSHIP_RELEASED_WHOLE" in runs[0].warnings
    assert "MEMBERSHIP_FLAGGED" not in runs[0].warnings  # released whole is not unstable
    assert runs[0].file["n_flagged"] == 0 and runs[0].file["share_members_above"] == 1.0
    assert runs[0].file["selection"]["n_members_released_whole"] == 1
    assert runs[0].settings["selection"] == RULE and runs[0].settings["n_selected"] == sel.sum()
    # the brute force agrees that the record released whole is the slot's record for sure
    assert exact_log_lr(ya, yb, sel, zs, 7, ya[7], yb[7], alpha=1.0) > 0

    est, truth = [], []
    keep = None
    for res in runs:
        r = res.records
        t = []
        for slot, source, row in zip(r["slot"], r["source"], r["row"], strict=True):
            tab = y if source == "original" else hold
            xa, xb = int(tab["A"].iloc[row]), int(tab["B"].iloc[row])
            t.append(exact_log_lr(ya, yb, sel, zs, int(slot), xa, xb, alpha=1.0))
        t = np.array(t)
        ok = ~r["released_whole"].to_numpy()
        keep = ok if keep is None else keep & ok
        truth.append(posterior_membership(t, 0.5))
        est.append(r["p_member"].to_numpy())
        assert (r.loc[ok, "flag_codes"] == "").all(), r
        # excluded exactly (p = 0) exactly where the enumeration gives Λ = 0
        assert np.array_equal(r["p_member"].to_numpy()[ok] == 0, np.isneginf(t[ok]))
    err = (np.array(est) - np.array(truth))[:, keep]
    # a target excluded in every run (its slots' selection or A rule it out) has no error at all
    exact_zero = (err == 0).all(axis=0)
    err = err[:, ~exact_zero]
    assert err.shape[1] >= 5
    check_p_true(err, np.zeros(err.shape[1]), 0.01, z_max=t_bound(REPS, err.shape[1], 0.01))
    # the rule matters for these members: selection on B makes the normaliser differ from 1
    assert (rec["log_normaliser"].iloc[[0, 2]] < -0.1).all()


@pytest.mark.slow
def test_leaving_the_selection_out_understates(selected_release):
    """Selection depends on the values: the ratio without the selection factor (the package's
    ratio with selection='independent', i.e. the factor cancelled) is smaller than the exact one
    for every selected member, by the enumeration and by the package; this is why a release
    that synthesizes selected records is refused when the rule is not stated."""
    y, syn, _, ya, yb, sel, _ = selected_release
    zs = [_codes(syn[0])]
    members = [0, 5, 9]
    with_s = np.array([exact_log_lr(ya, yb, sel, zs, i, ya[i], yb[i], alpha=1.0)
                       for i in members])
    without = np.array([exact_log_lr(ya, yb, sel, zs, i, ya[i], yb[i], alpha=1.0,
                                     with_selection=False) for i in members])
    # member 5 is selected by its A (unsynthesized, read off the release): no difference
    assert with_s[0] > without[0] + 0.3 and with_s[2] > without[2] + 0.3
    assert with_s[1] == pytest.approx(without[1], abs=1e-12)

    runs_rule = _runs(selected_release, 1, RULE, members)
    runs_ind = _runs(selected_release, 1, "independent", members)
    p_rule = np.array([r.records["p_member"].to_numpy()[:3] for r in runs_rule])
    p_ind = np.array([r.records["p_member"].to_numpy()[:3] for r in runs_ind])
    # 'independent' estimates the ratio without the factor (exact up to Monte Carlo) ...
    check_p_true(p_ind - posterior_membership(without, 0.5), np.zeros(3), 0.01,
                 z_max=t_bound(REPS, 3, 0.01))
    # ... which understates members 0 and 9 against the rule's estimate
    assert (p_rule.mean(axis=0)[[0, 2]] > p_ind.mean(axis=0)[[0, 2]] + 0.05).all()


def test_selection_errors(selected_release):
    """No rule: refused as before; a rule that does not reproduce the selection, one that
    looks at the other records, an expression that fails: coded errors naming the reason."""
    y, syn, model, *_ , hold = selected_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = model(1, draws=50)
    with pytest.raises(NotSupportedError, match="selection=") as err:
        membership_risk(fitted, y, syn[:1], holdout=hold)
    assert err.value.code == "MEMBERSHIP_PARTIAL_SYNTHESIS"
    with pytest.raises(ValidationError, match=r"synthesized row\(s\) it does not select") as err:
        membership_risk(fitted, y, syn[:1], holdout=hold, selection="B == '2'")
    assert err.value.code == "MEMBERSHIP_SELECTION_MISMATCH"

    def top_b(t):  # "the largest B values": a quantile of the table
        b = t["B"].astype(int)
        return (b >= b.quantile(0.6)) | (t["A"] == "2")

    with pytest.raises(NotSupportedError, match="depends on the other records") as err:
        membership_risk(fitted, y, syn[:1], holdout=hold, selection=top_b)
    assert err.value.code == "MEMBERSHIP_SELECTION_DATA_DEPENDENT"
    with pytest.raises(ValidationError, match="Income") as err:
        membership_risk(fitted, y, syn[:1], holdout=hold, selection="Income > 150000")
    assert err.value.code == "BAD_SELECTION_RULE"
    with pytest.raises(ValidationError, match="one True/False per record") as err:
        membership_risk(fitted, y, syn[:1], holdout=hold, selection=lambda t: 1)
    assert err.value.code == "BAD_SELECTION_RULE"
    with pytest.raises(ValidationError, match="selection must be") as err:
        membership_risk(fitted, y, syn[:1], holdout=hold, selection=3)
    assert err.value.code == "BAD_SELECTION_RULE"


def test_a_callable_rule_equals_the_expression(selected_release):
    """The same rule as a callable and as an expression gives the same result."""
    y, syn, model, *_ , hold = selected_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = model(1, draws=200)
        a = membership_risk(fitted, y, syn[:1], holdout=hold, records=[0, 7],
                            population=0, selection=RULE, random_seed=3,
                            attack=AttackSpec(bootstrap=0))
        b = membership_risk(fitted, y, syn[:1], holdout=hold, records=[0, 7],
                            population=0, random_seed=3,
                            selection=lambda t: (t["B"] == "2") | (t["A"] == "2"),
                            attack=AttackSpec(bootstrap=0))
    pd.testing.assert_series_equal(a.records["p_member"], b.records["p_member"])
    assert b.settings["selection"].startswith("callable")
    text = str(a.summary())
    assert "members released whole (P(member) = 1)" in text and RULE in text
    for kind in ("p_member", "roc", "dcr"):  # P = 1 and log LR = inf plot
        a.plot(kind)


def test_nothing_synthesized_every_member_released_whole():
    """A model fitted with records=[] (nothing synthesized): every member is revealed
    (P = 1, RELEASED_WHOLE), with no normaliser to estimate."""
    y = pd.DataFrame({"A": _cat([0, 1, 2, 0, 1, 1]), "B": _cat([1, 1, 0, 2, 2, 0])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = SequentialRegression(families={"B": "categorical"}, sampling=Sampling(draws=100),
                                      progressbar=False).fit(y, synthesized=["B"], records=[],
                                                             random_seed=1)
        res = membership_risk(fitted, y, fitted.synthesize(1, random_seed=2), holdout=y.iloc[:2],
                              selection="A == '9'", random_seed=3,
                              attack=AttackSpec(bootstrap=0))
    rec = res.records
    members = rec["role"] == "member"
    assert (rec.loc[members, "p_member"] == 1).all()
    assert (rec.loc[members, "flag_codes"] == "RELEASED_WHOLE").all()
    assert res.file["selection"]["n_selected"] == 0


def test_independent_selection_of_every_record_changes_nothing(selected_release):
    """A release of all records: selection='independent' gives the numbers of no selection
    (the factor cancels; every slot is synthesized), with the selection columns beside them."""
    y, _, _, *_, hold = selected_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = SequentialRegression(families={"B": "categorical"}, sampling=Sampling(draws=200),
                                    progressbar=False).fit(y, synthesized=["B"], random_seed=1)
        syn = full.synthesize(2, random_seed=2)
        kw = dict(holdout=hold, records=[0, 5, 9], attack=AttackSpec(bootstrap=0),
                  ratio=RatioSpec(normaliser_draws=50), random_seed=3)
        plain = membership_risk(full, y, syn, **kw)
        ind = membership_risk(full, y, syn, selection="independent", **kw)
    cols = list(plain.records.columns)
    pd.testing.assert_frame_equal(ind.records[cols], plain.records)
    assert ind.records["slot_selected"].all() and not ind.records["released_whole"].any()
