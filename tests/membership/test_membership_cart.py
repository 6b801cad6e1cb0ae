"""Membership risk of CART releases under the plug-in likelihood (methods, Membership disclosure
risk, CART releases) against brute force.

The reference is computed here from scratch, with exact rational arithmetic: the probability of
each released dataset is the product, over trees and leaves, of the Pólya-urn sequence
probability of the leaf's synthetic values (the urn starts with one ball per donor; each draw
puts back the ball and a copy: the Bayesian bootstrap) — or of independent uniform draws for
``donor="uniform"`` — with the records of the hypothesised data routed through the fitted
splits; the population predictive ``q(x' | y_{-i})`` is enumerated over every combination of
levels, as a record routed through the splits draws each value from the other donors of its
leaf. No code of the package's likelihood is used: only the fitted splits (``route``).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_risk.exceptions import NotSupportedError
from bayes_risk.membership import AttackSpec, RatioSpec, membership_risk
from bayes_risk.membership import trees as mtrees
from bayes_risk.models import CARTSynthesizer, RandomForestSynthesizer, SmallCellPMMSynthesizer

LEVELS = {"A": ["a", "b"], "B": ["x", "y", "z"]}


def _table(rows: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Categorical([r[k] for r in rows], categories=LEVELS[c])
                         for k, c in enumerate(LEVELS)})


DATA = _table([("a", "x"), ("a", "x"), ("a", "y"), ("b", "y"), ("b", "z"), ("b", "z")])
HOLD = _table([("a", "z"), ("b", "x"), ("a", "y"), ("b", "z")])


def _fit(data: pd.DataFrame, donor: str = "bayes_bootstrap") -> CARTSynthesizer:
    return CARTSynthesizer(min_leaf=2, donor=donor, random_seed=1).fit(
        data, synthesized=list(LEVELS), random_seed=1)


def _urn(donors: list, drawn: list, uniform: bool) -> Fraction:
    """Probability of the sequence ``drawn`` from an urn of ``donors`` (Pólya or uniform)."""
    if not drawn:
        return Fraction(1)
    balls = Counter(donors)
    n = len(donors)
    p = Fraction(1)
    for v in drawn:
        if n == 0 or balls[v] == 0:
            return Fraction(0)
        p *= Fraction(balls[v], n)
        if not uniform:
            balls[v] += 1
            n += 1
    return p


def _p_release(cart, data: pd.DataFrame, datasets: list[pd.DataFrame], uniform: bool) -> Fraction:
    """``p(Z | data)``: datasets independent, leaves independent, given the fitted splits."""
    p = Fraction(1)
    for z in datasets:
        for col in cart.visit_sequence_:
            d_leaf = cart.route(data, col)[0]
            z_leaf = cart.route(z, col)[0]
            for u in np.unique(z_leaf):
                p *= _urn(list(data[col][d_leaf == u]), list(z[col][z_leaf == u]), uniform)
    return p


def _q(cart, others: pd.DataFrame, x: pd.DataFrame) -> Fraction:
    """``q(x | others)``: each value drawn from the other donors of the leaf ``x`` routes to."""
    p = Fraction(1)
    for col in cart.visit_sequence_:
        d_leaf = cart.route(others, col)[0]
        u = cart.route(x, col)[0][0]
        donors = list(others[col][d_leaf == u])
        if not donors:
            return Fraction(0)
        p *= Fraction(sum(v == x[col].iloc[0] for v in donors), len(donors))
    return p


def _brute_p_member(cart, data, datasets, target: pd.DataFrame, slot: int,
                    uniform: bool) -> float:
    others = data.drop(index=slot).reset_index(drop=True)
    num = _p_release(cart, pd.concat([others, target], ignore_index=True), datasets, uniform)
    den_w = Fraction(0)
    den = Fraction(0)
    for rec in itertools.product(*LEVELS.values()):
        x = _table([rec])
        q = _q(cart, others, x)
        if q:
            den_w += q
            den += q * _p_release(cart, pd.concat([others, x], ignore_index=True), datasets,
                                  uniform)
    den /= den_w
    if den == 0:  # a revealed slot: +inf or 0 (methods, CART releases)
        return 1.0 if num > 0 else 0.0
    lam = num / den
    return float(lam / (1 + lam))  # balanced prior


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("seed", [3, 11])
def test_membership_probability_matches_brute_force(donor, m, seed):
    cart = _fit(DATA, donor)
    assert cart.trees_["B"].n_nodes == 3  # a two-leaf tree of B on A; A from its marginal
    syn = cart.synthesize(m, random_seed=seed)
    res = membership_risk(cart, DATA, syn, holdout=HOLD, random_seed=1,
                          attack=AttackSpec(bootstrap=0))
    assert "exact" in res.settings["normaliser"]
    tab = res.records
    targets = pd.concat([DATA, HOLD], ignore_index=True)
    for t, row in tab.iterrows():
        ref = _brute_p_member(cart, DATA, list(syn.datasets), targets.iloc[[t]],
                              int(row["slot"]), donor == "uniform")
        assert row["p_member"] == pytest.approx(ref, rel=1e-12, abs=1e-15), (t, row.to_dict())
        assert row["flag_codes"] == ""
    # members' and revealed slots are reported
    assert tab["slot_revealed"].dtype == bool
    assert (tab.loc[tab["slot_revealed"] & (tab["role"] == "member"), "p_member"] == 1.0).all()


def test_revealed_member_is_reported_with_probability_one():
    # record 2 is the only (a, y): a release that copies it reveals the slot
    cart = _fit(DATA)
    z = _table([("a", "y"), ("a", "x"), ("a", "x"), ("b", "y"), ("b", "z"), ("b", "z")])
    res = membership_risk(cart, DATA, [z], holdout=HOLD, random_seed=1,
                          attack=AttackSpec(bootstrap=0))
    tab = res.records
    assert bool(tab.loc[2, "slot_revealed"]) and tab.loc[2, "p_member"] == 1.0
    assert tab.loc[2, "log_lr"] == np.inf and tab.loc[2, "flag_codes"] == ""
    assert "MEMBERSHIP_REVEALED" in res.warnings
    assert 0.0 < res.file["share_members_revealed"] <= 1.0
    # a holdout record in that slot that cannot produce the release has probability 0
    non = tab[(tab["role"] == "non-member") & (tab["slot"] == 2)]
    for t, row in non.iterrows():
        ref = _brute_p_member(cart, DATA, [z], pd.concat([DATA, HOLD], ignore_index=True)
                              .iloc[[t]], 2, False)
        assert row["p_member"] == ref


def _ce_like(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (b + rng.integers(0, 2, n)) % 3
    d = rng.integers(0, 3, n)
    cats = ["p", "q", "r"]
    out = pd.DataFrame({k: pd.Categorical(np.asarray(cats)[v], categories=cats)
                        for k, v in zip("ABCD", (a, b, c, d), strict=True)})
    out["N"] = (rng.integers(0, 20, n) + 3 * a).astype(np.int64)  # a count with many ties
    return out


def test_monte_carlo_normaliser_agrees_with_enumeration():
    # more possible records than draws: importance sampling; checked against the exact sum,
    # within 4 of its own standard errors (fixed seeds)
    data = _ce_like(60, 5)
    cart = CARTSynthesizer(min_leaf=4, random_seed=1).fit(data, synthesized=list("ABCDN"),
                                                          random_seed=1)
    assert len(mtrees.population_support(cart.plugin_likelihood(data), 10**6)[1]) > 150
    syn = cart.synthesize(3, random_seed=2)
    res = membership_risk(cart, data, syn, records=range(30), population=0, random_seed=4,
                          ratio=RatioSpec(normaliser_draws=150), attack=AttackSpec(bootstrap=0))
    assert "population draws" in res.settings["normaliser"]
    plugin = mtrees.tree_plugin(cart, data)
    exact = mtrees.tree_log_lr(plugin, list(syn.datasets), data.iloc[:30],
                               np.arange(30), None, True)
    tab = res.records
    ok = ~tab["slot_revealed"].to_numpy()
    assert ok.sum() >= 6
    err = tab["log_normaliser"].to_numpy()[ok] - exact["log_normaliser"][ok]
    se = tab["normaliser_mcse"].to_numpy()[ok]
    assert np.all(np.abs(err) <= 4 * se + 1e-9), (err, se)
    assert np.all(se > 0) and np.all(se < 0.2)
    np.testing.assert_array_equal(tab["slot_revealed"].to_numpy(), exact["slot_revealed"])
    # a normaliser from too few draws is flagged (the existing flag)
    few = membership_risk(cart, data, syn, records=range(30), population=0, random_seed=4,
                          ratio=RatioSpec(normaliser_draws=20), attack=AttackSpec(bootstrap=0))
    assert set(few.records["flag_codes"]) <= {"", "NORMALISER_UNSTABLE"}


def test_the_ratio_has_no_plugin_replicates():
    """The plug-in's Bayesian-bootstrap replicates (``n_bootstrap``, the attribute step's
    ``--plugin-replicates``) are a smoothed column's, which membership refuses: a plug-in
    built with one replicate and another seed gives the same ratios, bit for bit, as the one
    the synthesizer builds (500), also with the importance-sampling normaliser."""
    data = _ce_like(60, 5)
    cart = CARTSynthesizer(min_leaf=4, random_seed=1).fit(data, synthesized=list("ABCDN"),
                                                          random_seed=1)
    syn = cart.synthesize(2, random_seed=2)
    kw = dict(records=range(20), population=0, random_seed=4,
              ratio=RatioSpec(normaliser_draws=150), attack=AttackSpec(bootstrap=0))
    default = membership_risk(cart, data, syn, **kw)
    one = membership_risk(cart.plugin_likelihood(data, n_bootstrap=1, random_seed=9), data,
                          syn, **kw)
    assert "population draws" in default.settings["normaliser"]
    assert np.isfinite(default.records["log_lr"]).sum() >= 5
    pd.testing.assert_frame_equal(default.records, one.records)
    smooth = CARTSynthesizer(min_leaf=4, smoothing=True, random_seed=1).fit(
        data, synthesized=list("ABCDN"), random_seed=1)
    with pytest.raises(NotSupportedError, match="smooths the numeric column"):
        membership_risk(smooth, data, smooth.synthesize(1, random_seed=2), **kw)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(LEVELS["A"]), st.sampled_from(LEVELS["B"])),
                     min_size=4, max_size=6),
       seed=st.integers(0, 2**16), m=st.integers(1, 2))
def test_probabilities_are_probabilities(rows, seed, m):
    data = _table(rows)
    cart = _fit(data)
    syn = cart.synthesize(m, random_seed=seed)
    res = membership_risk(cart, data, syn, holdout=HOLD, random_seed=seed,
                          attack=AttackSpec(bootstrap=0))
    p = res.records["p_member"].to_numpy()
    assert np.all((p >= 0.0) & (p <= 1.0))
    tab = res.records
    # every member can produce the release that was drawn from its data
    assert np.all(np.isfinite(tab["log_lr"][tab["role"] == "member"])
                  | (tab["log_lr"][tab["role"] == "member"] == np.inf))
    assert (tab.loc[tab["slot_revealed"] & (tab["role"] == "member"), "p_member"] == 1.0).all()
    assert not tab["flag_codes"].str.contains("LIKELIHOOD_UNDEFINED").any()
    # a holdout record whose values no record of the data holds still gets a probability
    assert tab["p_member"].notna().all()


def test_polya_identity_for_one_dataset():
    # m = 1 and every synthetic record drawn from a leaf: summing over the population gives
    # p(Z | y_{-i}) (the urn is exchangeable), so Λ is the ratio p(Z | y_{-i}, x) / p(Z | y_{-i})
    cart = _fit(DATA)
    syn = cart.synthesize(1, random_seed=7)
    res = membership_risk(cart, DATA, syn, population=0, random_seed=1,
                          attack=AttackSpec(bootstrap=0))
    z = list(syn.datasets)
    for i, row in res.records.iterrows():
        if row["slot_revealed"]:
            continue
        others = DATA.drop(index=i).reset_index(drop=True)
        lam = _p_release(cart, DATA, z, False) / _p_release(cart, others, z, False)
        assert row["log_lr"] == pytest.approx(math.log(lam), rel=1e-12, abs=1e-12)


def test_refusals_are_coded():
    data = DATA
    smooth = _ce_like(40, 1).assign(N=np.random.default_rng(0).normal(size=40))
    s = CARTSynthesizer(smoothing=True, random_seed=1).fit(
        smooth, synthesized=["A", "N"], random_seed=1)
    with pytest.raises(NotSupportedError) as err:
        membership_risk(s, smooth, s.synthesize(1, random_seed=1))
    assert err.value.code == "MEMBERSHIP_MODEL_UNSUPPORTED" and "smooth" in str(err.value)
    # selected records only: still refused (unsynthesized columns are not: test_partial_*)
    part = CARTSynthesizer(min_leaf=2, random_seed=1).fit(data, synthesized=["B"],
                                                          records=[0, 1, 2], random_seed=1)
    with pytest.raises(NotSupportedError) as err:
        membership_risk(part, data, part.synthesize(1, random_seed=1))
    assert err.value.code == "MEMBERSHIP_PARTIAL_SYNTHESIS" and "selected" in str(err.value)
    rf = RandomForestSynthesizer(random_seed=1).fit(data, synthesized=list(LEVELS),
                                                    random_seed=1)
    with pytest.raises(NotSupportedError) as err:
        membership_risk(rf, data, rf.synthesize(1, random_seed=1))
    assert err.value.code == "MEMBERSHIP_MODEL_UNSUPPORTED" and "forest" in str(err.value)
    # Hawala's PMM: refused with its own reasons (methods, Models supported and refused)
    pmm_data = _ce_like(60, 2)
    pmm = SmallCellPMMSynthesizer(identifying=["A", "B", "D"], threshold=3, random_seed=1).fit(
        pmm_data)
    assert pmm.recipients_.any()  # the refusal is about a release that synthesized records
    with pytest.raises(NotSupportedError) as err:
        membership_risk(pmm, pmm_data, pmm.synthesize(1, random_seed=1))
    assert err.value.code == "MEMBERSHIP_MODEL_UNSUPPORTED"
    assert "small cells" in str(err.value) and "closest" in str(err.value)
    # data with missing values: the plug-in holds the target's missingness, a population
    # record in the slot has its own (methods, CART releases)
    holes = _ce_like(40, 3)
    holes["N"] = holes["N"].astype(float).where(np.arange(40) % 6 > 0)
    cm = CARTSynthesizer(random_seed=1).fit(holes, synthesized=["A", "N"], random_seed=1)
    with pytest.raises(NotSupportedError) as err:
        membership_risk(cm, holes, cm.synthesize(1, random_seed=1))
    assert err.value.code == "MEMBERSHIP_MODEL_UNSUPPORTED"
    assert "missing values (columns ['N'])" in str(err.value)
    # a forest with smoothed leaves is a forest: refused with the forests' reason
    sm = RandomForestSynthesizer(n_trees=5, min_samples_leaf=3, smoothing=True,
                                 random_seed=1).fit(smooth, synthesized=["A", "N"], random_seed=1)
    with pytest.raises(NotSupportedError) as err:
        membership_risk(sm, smooth, sm.synthesize(1, random_seed=1))
    assert err.value.code == "MEMBERSHIP_MODEL_UNSUPPORTED" and "forest" in str(err.value)


def test_cli_and_audit_accept_a_saved_cart(tmp_path):
    """``bayes-risk membership --model <saved CART>`` and the audit's membership step, which
    refused CART (MEMBERSHIP_MODEL_UNSUPPORTED) before."""
    import json
    import warnings

    import bayes_risk as br
    from bayes_risk.cli import main

    data = _ce_like(60, 2)
    data.iloc[:40].to_csv(tmp_path / "train.csv", index=False)
    data.iloc[40:].to_csv(tmp_path / "hold.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(tmp_path / "train.csv"), "--method", "cart", "--synthesize",
                     *data.columns, "--random-seed", "1", "-q",
                     "--out", str(tmp_path / "model")]) == 0
        assert main(["synthesize", "--model", str(tmp_path / "model"), "-m", "2",
                     "--random-seed", "2", "-q", "--out", str(tmp_path / "syn")]) == 0
        assert main(["membership", str(tmp_path / "train.csv"), str(tmp_path / "syn"),
                     "--model", str(tmp_path / "model"), "--holdout", str(tmp_path / "hold.csv"),
                     "--bootstrap", "20", "--random-seed", "3", "-q",
                     "--out", str(tmp_path / "mem")]) == 0
    rec = pd.read_csv(tmp_path / "mem" / "records.csv")
    assert (rec["role"] == "member").sum() == 40 and (rec["source"] == "holdout").sum() == 20
    assert {"slot_revealed", "normaliser_mcse"} <= set(rec.columns)
    s = json.loads((tmp_path / "mem" / "summary.json").read_text())
    assert s["settings"]["model"] == "CARTSynthesizer"
    assert 0.0 <= s["file"]["share_members_revealed"] <= 1.0

    train = br.read_table(tmp_path / "train.csv")
    hold = br.read_table(tmp_path / "hold.csv")
    syn = br.read_synthetic(tmp_path / "syn", like=train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(train, syn, known=["A", "B"], model=tmp_path / "model", holdout=hold,
                       random_seed=1, progressbar=False, out=tmp_path / "audit",
                       settings=br.AuditSettings(skip=["utility", "identification",
                                                       "posterior_identification", "attribute",
                                                       "disclosure"]))
    step = res.step("membership")
    assert step.status == "ran", step.reason
    assert step.result.file["n_members"] == 40
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="membership"' in html and "AUC − 0.5" in html
    strict = res.plan.thresholds.parse(["membership_advantage=0", "membership_share=0"])
    res.plan.thresholds = strict
    causes = [v.cause for v in res.verdicts if v.step == "membership" and v.exceeds]
    if step.result.file["share_members_revealed"] > 0:
        assert causes and all("revealed outright" in c for c in causes)


# ------------------------------------------------------------------------------------------
# partially synthetic CART releases: an unsynthesized column U, A and B synthesized given it
# ------------------------------------------------------------------------------------------
PLEVELS = {"U": ["u", "v", "w"], "A": ["a", "b"], "B": ["x", "y", "z"]}


def _ptable(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Categorical([r[k] for r in rows], categories=PLEVELS[c])
                         for k, c in enumerate(PLEVELS)})


# no record has U = "w" (a declared level); U = "v" records are fewer
PDATA = _ptable([("u", "a", "x"), ("u", "a", "x"), ("u", "a", "y"), ("u", "b", "y"),
                 ("u", "b", "y"), ("v", "b", "z"), ("v", "b", "z"), ("v", "a", "z"),
                 ("v", "b", "y")])
PHOLD = _ptable([("u", "a", "x"), ("v", "b", "z"), ("u", "b", "z"), ("w", "a", "x"),
                 ("v", "a", "y")])


def _pfit(donor: str = "bayes_bootstrap") -> CARTSynthesizer:
    return CARTSynthesizer(min_leaf=2, donor=donor, random_seed=1).fit(
        PDATA, synthesized=["A", "B"], random_seed=1)


def _brute_partial(cart, data, datasets, target: pd.DataFrame, slot: int, uniform: bool,
                   alpha: Fraction) -> float:
    """Posterior membership probability (balanced prior) from scratch: under H0 the slot holds
    ``x' = (u, s')`` with ``u`` from the Dirichlet-process model of the unsynthesized values
    given the other records and ``s'`` from ``q(· | u, y_{-i})``; the release shows the slot's
    unsynthesized value as it is (probability 0 for any other)."""
    others = data.drop(index=slot).reset_index(drop=True)
    n = len(data)

    def p_release(rec: pd.DataFrame) -> Fraction:
        d = pd.concat([data.iloc[:slot], rec, data.iloc[slot + 1:]], ignore_index=True)
        if not all((z["U"].astype(str).to_numpy() == d["U"].astype(str).to_numpy()).all()
                   for z in datasets):
            return Fraction(0)
        return _p_release(cart, d, datasets, uniform)

    num = p_release(target)
    C = len(PLEVELS["U"])
    den = Fraction(0)
    for u in PLEVELS["U"]:
        p_u = (int((others["U"] == u).sum()) + alpha / C) / (n - 1 + alpha)
        w = acc = Fraction(0)
        for a, b in itertools.product(PLEVELS["A"], PLEVELS["B"]):
            x = _ptable([(u, a, b)])
            q = _q(cart, others, x)
            if q:
                w += q
                acc += q * p_release(x)
        if w:
            den += p_u * acc / w
    if den == 0:  # a revealed slot: +inf or 0 (methods, CART releases)
        return 1.0 if num > 0 else 0.0
    lam = num / den
    return float(lam / (1 + lam))


@pytest.mark.parametrize("donor", ["bayes_bootstrap", "uniform"])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize(("seed", "alpha"), [(3, Fraction(1)), (11, Fraction(5, 2))])
def test_partial_membership_probability_matches_brute_force(donor, m, seed, alpha):
    cart = _pfit(donor)
    assert cart.predictors_ == {"A": ["U"], "B": ["U", "A"]}
    assert cart.trees_["A"].n_nodes > 1  # A's tree splits on the unsynthesized U
    syn = cart.synthesize(m, random_seed=seed)
    res = membership_risk(cart, PDATA, syn, holdout=PHOLD, random_seed=1,
                          attack=AttackSpec(bootstrap=0),
                          ratio=RatioSpec(unsynthesized_concentration=float(alpha)))
    assert "exact" in res.settings["normaliser"]
    assert res.settings["unsynthesized"] == ["U"]
    tab = res.records
    targets = pd.concat([PDATA, PHOLD], ignore_index=True)
    finite = 0
    for t, row in tab.iterrows():
        ref = _brute_partial(cart, PDATA, list(syn.datasets), targets.iloc[[t]],
                             int(row["slot"]), donor == "uniform", alpha)
        assert row["p_member"] == pytest.approx(ref, rel=1e-12, abs=1e-15), (t, row.to_dict())
        assert row["flag_codes"] == ""
        finite += bool(0.0 < ref < 1.0)
        same_u = targets.loc[t, "U"] == PDATA.loc[int(row["slot"]), "U"]
        assert bool(row["unsynthesized_match"]) == same_u
        if not same_u:  # excluded exactly, no Monte Carlo
            assert row["p_member"] == 0.0 and row["log_lr"] == -np.inf
    assert finite >= 3  # not only revealed or excluded targets
    # the holdout record whose U no record has is excluded in any slot
    assert tab.loc[len(PDATA) + 3, "p_member"] == 0.0
    assert not tab.loc[len(PDATA) + 3, "unsynthesized_match"]
    assert res.file["unsynthesized"]["n_cells"] == 3


def test_partial_member_factor_of_the_unsynthesized_values():
    # a member's log ratio is the synthesized part's given r minus log p(r | y_{-i}), with
    # p(r | y_{-i}) = (n_r - 1 + α / C) / (n - 1 + α) (the sequential regressions' model)
    cart = _pfit()
    syn = cart.synthesize(1, random_seed=5)
    a1 = membership_risk(cart, PDATA, syn, population=0, random_seed=1,
                         attack=AttackSpec(bootstrap=0))
    a2 = membership_risk(cart, PDATA, syn, population=0, random_seed=1,
                         attack=AttackSpec(bootstrap=0),
                         ratio=RatioSpec(unsynthesized_concentration=4.0))
    n_r = PDATA["U"].map(PDATA["U"].value_counts()).to_numpy()
    for a, tab in ((1.0, a1.records), (4.0, a2.records)):
        ref = -np.log((n_r - 1 + a / 3) / (len(PDATA) - 1 + a))
        np.testing.assert_allclose(tab["log_p_unsynthesized"].to_numpy(), -ref, rtol=1e-12)
    ok = np.isfinite(a1.records["log_lr"].to_numpy())
    assert ok.any()
    np.testing.assert_allclose(
        (a1.records["log_lr"] + a1.records["log_p_unsynthesized"]).to_numpy()[ok],
        (a2.records["log_lr"] + a2.records["log_p_unsynthesized"]).to_numpy()[ok], rtol=1e-12)


def test_partial_monte_carlo_normaliser_agrees_with_enumeration():
    # per cell of the unsynthesized column, importance sampling from rows of fresh datasets
    # with that cell (draws of q(. | r, y)) against the exact sum, within 4 standard errors
    data = _ce_like(60, 5)
    cart = CARTSynthesizer(min_leaf=4, random_seed=1).fit(data, synthesized=list("BCDN"),
                                                          random_seed=1)
    plugin = mtrees.tree_plugin(cart, data)
    assert mtrees.population_support(plugin, 40, mtrees.unsynthesized_values(plugin, 0)) is None
    syn = cart.synthesize(3, random_seed=2)
    res = membership_risk(cart, data, syn, records=range(30), population=0, random_seed=4,
                          ratio=RatioSpec(normaliser_draws=40), attack=AttackSpec(bootstrap=0))
    assert "population draws" in res.settings["normaliser"]
    exact = mtrees.tree_log_lr(plugin, list(syn.datasets), data.iloc[:30], np.arange(30), None,
                               True, slot_cells=data["A"].cat.codes.to_numpy()[:30])
    tab = res.records
    ok = ~tab["slot_revealed"].to_numpy()
    assert ok.sum() >= 6
    err = tab["log_normaliser"].to_numpy()[ok] - exact["log_normaliser"][ok]
    se = tab["normaliser_mcse"].to_numpy()[ok]
    assert np.all(np.abs(err) <= 4 * se + 1e-9), (err, se)
    assert np.all(se > 0)
    np.testing.assert_array_equal(tab["slot_revealed"].to_numpy(), exact["slot_revealed"])


def test_cli_runs_a_partially_synthetic_cart(tmp_path):
    """``bayes-risk membership`` of a saved CART with unsynthesized columns, which was refused
    (MEMBERSHIP_PARTIAL_SYNTHESIS): the partial-synthesis columns and summary are written."""
    import json
    import warnings

    from bayes_risk.cli import main

    data = _ce_like(60, 2)
    data.iloc[:40].to_csv(tmp_path / "train.csv", index=False)
    data.iloc[40:].to_csv(tmp_path / "hold.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(tmp_path / "train.csv"), "--method", "cart", "--synthesize",
                     "B", "C", "N", "--random-seed", "1", "-q",
                     "--out", str(tmp_path / "model")]) == 0
        assert main(["synthesize", "--model", str(tmp_path / "model"), "-m", "2",
                     "--random-seed", "2", "-q", "--out", str(tmp_path / "syn")]) == 0
        assert main(["membership", str(tmp_path / "train.csv"), str(tmp_path / "syn"),
                     "--model", str(tmp_path / "model"), "--holdout", str(tmp_path / "hold.csv"),
                     "--bootstrap", "0", "--random-seed", "3", "-q",
                     "--out", str(tmp_path / "mem")]) == 0
    rec = pd.read_csv(tmp_path / "mem" / "records.csv")
    assert {"unsynthesized_match", "log_p_unsynthesized", "slot_revealed"} <= set(rec.columns)
    assert rec.loc[rec["role"] == "member", "unsynthesized_match"].all()
    assert (rec.loc[~rec["unsynthesized_match"], "p_member"] == 0.0).all()
    s = json.loads((tmp_path / "mem" / "summary.json").read_text())
    assert s["settings"]["unsynthesized"] == ["A", "D"]
    assert s["file"]["unsynthesized"]["columns"] == ["A", "D"]
