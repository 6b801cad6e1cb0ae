"""Utility of a release whose synthesizer imputes missing values (methods, Utility of an
imputing release): imputed columns are compared on the original's observed cells.

Hand-made tables with answers worked out by hand, a small DPMPM fit on the ACS extract with
missing values, and the command line.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk import cli
from bayes_risk.data import SyntheticData, infer_schema
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models import Sampling
from bayes_risk.utility import (
    OverlapSpec,
    PropensitySpec,
    compare_estimates,
    pmse,
    utility_summary,
)

M, F = "Male", "Female"


def _codes(caught) -> list[str]:
    return [getattr(w.message, "code", None) for w in caught]


@pytest.fixture()
def tables():
    """Original: SEX missing in rows 4, 5, 9; observed M, M, M, F, F, M, F (4 of 7 Male).

    Synthetic (an imputing synthesizer: no missing value): rows 0-3 and 6-8 equal the
    original, the rows where the original is missing are filled with ``Male``.
    """
    sex = [M, M, M, F, None, None, F, M, F, None]
    grp = ["a", "b", "a", "b", "a", "b", "a", "b", "a", "b"]
    orig = pd.DataFrame({"SEX": sex, "GRP": grp})
    syn = orig.copy()
    syn.loc[[4, 5, 9], "SEX"] = M
    return orig, syn


def _summary(orig, syn, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = utility_summary(orig, syn, synthesized=["SEX"], **kw,
                            propensity=PropensitySpec(max_order=0))
    return s, _codes(caught)


def _row(s, name):
    return s.overlap.set_index("estimand").loc[name]


# ------------------------------------------------------------------------------ hand-made
def test_proportions_on_observed_cells(tables):
    orig, syn = tables
    s, codes = _summary(orig, [syn, syn])
    # among the 7 observed records: 4 Male; the synthetic values at those rows are identical
    assert _row(s, "P(SEX = Male)")["estimate_orig"] == pytest.approx(4 / 7, abs=1e-15)
    assert _row(s, "P(SEX = Male)")["estimate_syn"] == pytest.approx(4 / 7, abs=1e-15)
    assert _row(s, "P(SEX = Male)")["se_orig"] == pytest.approx(
        np.sqrt(4 / 7 * 3 / 7 / 7), rel=1e-12)
    assert "P(SEX missing)" not in set(s.overlap["estimand"])
    assert s.settings["imputed_columns"] == ["SEX"]
    assert s.settings["imputed_columns_source"] == "inferred"
    assert "masked" in s.settings["imputed_comparison"]
    assert {"IMPUTED_INFERRED", "MISSING_AT_RANDOM_ASSUMED"} <= set(s.warnings)
    assert {"IMPUTED_INFERRED", "MISSING_AT_RANDOM_ASSUMED"} <= set(codes)
    # each warning once, although pmse and the summary both compare the imputed column
    assert codes.count("MISSING_AT_RANDOM_ASSUMED") == 1


def test_old_comparison_counts_missing_as_a_level(tables):
    """imputed=[]: today's comparison (missing a level), the artefact this replaces."""
    orig, syn = tables
    s, codes = _summary(orig, [syn, syn], imputed=[])
    # P(SEX = Male) over all 10 records: 4/10 in the original, 7/10 in the synthetic data
    assert _row(s, "P(SEX = Male)")["estimate_orig"] == pytest.approx(0.4, abs=1e-15)
    assert _row(s, "P(SEX = Male)")["estimate_syn"] == pytest.approx(0.7, abs=1e-15)
    assert _row(s, "P(SEX missing)")["estimate_orig"] == pytest.approx(0.3, abs=1e-15)
    assert s.settings["imputed_columns"] == [] and s.settings["imputed_comparison"] is None
    assert "MISSING_AT_RANDOM_ASSUMED" not in codes and "IMPUTED_INFERRED" not in codes


def test_pmse_masked_imputed_cells_are_not_a_feature(tables):
    orig, syn = tables
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = pmse(orig, [syn], synthesized=["SEX"], propensity=PropensitySpec(max_order=0))
        old = pmse(orig, [syn], synthesized=["SEX"], imputed=[],
                   propensity=PropensitySpec(max_order=0))
    # masked at the original's missing cells the synthetic table equals the original
    assert new.pmse[0] == pytest.approx(0.0, abs=1e-20)
    assert new.settings["imputed_columns"] == ["SEX"]
    # with missing as a level, the original's 3 NA records alone tell the tables apart
    assert old.pmse[0] > 0.02
    assert old.settings["imputed_columns"] == []


def test_pmse_saturated_value_by_hand():
    """One imputed column, the only column: masking makes the NA cells identical, so the
    pMSE is that of the observed cells alone (worked by hand)."""
    orig = pd.DataFrame({"x": ["a", "a", "b", None]})
    syn = pd.DataFrame({"x": ["a", "b", "b", "a"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pmse(orig, [syn], imputed=["x"], propensity=PropensitySpec(max_order=0))
    # masked synthetic: a, b, b, NA. Stacked: a -> 2 orig, 1 syn (p = 1/3); b -> 1 orig,
    # 2 syn (p = 2/3); NA -> 1, 1 (p = 1/2); c = 1/2:
    # pMSE = (3 (1/6)^2 + 3 (1/6)^2 + 0) / 8 = 1/48
    assert r.pmse[0] == pytest.approx(1 / 48, rel=1e-9)
    assert r.settings["imputed_columns_source"] == "user"


def test_rows_not_aligned_use_observed_records(tables):
    """Different row counts: no masking is possible; the proportions use the original's
    observed cells, the pMSE the original's observed records only."""
    orig, _ = tables
    syn = orig.dropna().reset_index(drop=True)  # 7 records, all observed
    syn = pd.concat([syn, syn], ignore_index=True)  # 14 records: same distribution
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pmse(orig, [syn], imputed=["SEX"], propensity=PropensitySpec(max_order=0))
        s = utility_summary(orig, [syn, syn], synthesized=["SEX", "GRP"],
                            imputed=["SEX"],
                            propensity=PropensitySpec(max_order=0))
    assert r.n_original == 7
    # an imputed column left out of the propensity model drops no record
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = pmse(orig, [syn], imputed=["SEX"],
                 propensity=PropensitySpec(max_order=0, columns=["GRP"]))
    assert g.n_original == 10 and g.settings["imputed_columns"] == []
    assert r.pmse[0] == pytest.approx(0.0, abs=1e-20)
    assert "observed cells" in r.settings["imputed_comparison"]
    assert _row(s, "P(SEX = Male)")["estimate_orig"] == pytest.approx(4 / 7, abs=1e-15)
    assert _row(s, "P(SEX = Male)")["estimate_syn"] == pytest.approx(4 / 7, abs=1e-15)


def test_formulas_use_the_same_records(tables):
    orig, syn = tables
    orig = orig.assign(y=np.arange(10.0) ** 1.5)
    syn = syn.assign(y=orig["y"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = compare_estimates(orig, [syn, syn], formula="y ~ C(SEX)")
    # masked, the synthetic fits use the original's 7 records: identical coefficients
    assert np.allclose(t["estimate_syn"], t["estimate_orig"], rtol=0, atol=1e-10)
    assert t.attrs["imputed"]["imputed_columns"] == ["SEX"]
    assert "MISSING_AT_RANDOM_ASSUMED" in t.attrs["warnings"]
    assert "MISSING_AT_RANDOM_ASSUMED" in _codes(caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = compare_estimates(orig, [syn, syn], formula="y ~ C(SEX)", imputed=[])
    assert not np.allclose(old["estimate_syn"], old["estimate_orig"], atol=1e-3)


def test_release_that_synthesizes_missing_values_is_unchanged(tables):
    """CART / random forests synthesize missing values: recorded imputed_columns = [] (or a
    synthetic table with empty cells) gives exactly the comparison with missing as a level."""
    orig, syn = tables
    cart_like = syn.copy()
    cart_like.loc[[1, 4], "SEX"] = None
    rel = SyntheticData([cart_like, syn], method="cart", imputed_columns=[])
    a, codes = _summary(orig, rel)
    b, _ = _summary(orig, [cart_like, syn], imputed=[])
    pd.testing.assert_frame_equal(a.overlap, b.overlap)
    np.testing.assert_array_equal(a.pmse.pmse, b.pmse.pmse)
    assert a.settings["imputed_columns_source"] == "none"
    assert "MISSING_AT_RANDOM_ASSUMED" not in codes and "IMPUTED_INFERRED" not in codes
    # not recorded: one dataset keeps missing values, so nothing is inferred either
    c, codes = _summary(orig, [cart_like, syn])
    pd.testing.assert_frame_equal(c.overlap, b.overlap)
    assert "IMPUTED_INFERRED" not in codes


def test_manifest_record_is_used_without_inference_warning(tables, tmp_path):
    orig, syn = tables
    rel = SyntheticData([syn, syn], method="dpmpm", imputed_columns=["SEX"])
    back = SyntheticData.load(rel.save(tmp_path / "rel"))
    assert back.imputed_columns == ["SEX"]
    s, codes = _summary(orig, back)
    assert s.settings["imputed_columns_source"] == "manifest"
    assert "IMPUTED_INFERRED" not in codes and "MISSING_AT_RANDOM_ASSUMED" in codes
    assert _row(s, "P(SEX = Male)")["estimate_orig"] == pytest.approx(4 / 7, abs=1e-15)


def test_imputed_argument_errors(tables, tmp_path):
    orig, syn = tables
    with pytest.raises(SchemaError, match="imputed: column 'SX'") as exc:
        _summary(orig, [syn], imputed=["SX"])
    assert exc.value.code == "UNKNOWN_COLUMN"
    with pytest.raises(ValidationError, match="imputed must be 'auto' or a sequence of"):
        _summary(orig, [syn], imputed="SEX")
    with pytest.raises(SchemaError, match="imputed_columns names"):
        SyntheticData([syn], imputed_columns=["nope"])
    folder = SyntheticData([syn], imputed_columns=["SEX"]).save(tmp_path / "r")
    man = json.loads((folder / "manifest.json").read_text())
    man["imputed_columns"] = ["nope"]
    (folder / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ValidationError, match="'imputed_columns' names") as exc:
        SyntheticData.load(folder)
    assert exc.value.code == "MANIFEST_INVALID"


# ------------------------------------------------------------------------------ DPMPM fit
@pytest.fixture(scope="module")
def acs_dpmpm():
    from bayes_risk.data import read_table
    from bayes_risk.models import DPMPM

    df = read_table(shared_path("data", "ss16pusa_sample_nozeros_miss.csv"))
    df = df.iloc[:300].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: convergence warnings expected
        model = DPMPM(n_components=5,
                      sampling=Sampling(tune=20, draws=20, chains=1), progressbar=False).fit(
            df, random_seed=1)
    return df, model.synthesize(2, random_seed=2), model


def test_dpmpm_release_records_imputed_columns(acs_dpmpm, tmp_path):
    from bayes_risk.models import DPMPM

    df, rel, model = acs_dpmpm
    assert rel.imputed_columns == ["MAR", "SEX", "WKL"]
    assert all(z.notna().all().all() for z in rel)
    # kept by a saved model (whose folder holds no data under full synthesis)
    back = DPMPM.load(model.save(tmp_path / "model"))
    assert back.data_ is None and back.synthesize(1, random_seed=3).imputed_columns == [
        "MAR", "SEX", "WKL"]
    # a complete original: nothing imputed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = DPMPM(n_components=3,
                     sampling=Sampling(tune=5, draws=5, chains=1), progressbar=False).fit(
            df.dropna(), random_seed=1)
    assert full.synthesize(1, random_seed=1).imputed_columns == []


def test_dpmpm_release_no_longer_an_artefact(acs_dpmpm):
    df, rel, _ = acs_dpmpm
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = utility_summary(df, rel, random_seed=1, propensity=PropensitySpec(max_order=0))
        old = utility_summary(df, rel, random_seed=1, imputed=[],
                              propensity=PropensitySpec(max_order=0))
    # the artefact: the original's missing level against none (S_pMSE about 50, overlaps 0)
    assert old.pmse.mean_ratio > 20
    assert (old.overlap["overlap"] == 0).sum() >= 3
    # like with like: proportions among the observed records; S_pMSE near its null of 1
    assert new.pmse.mean_ratio < 5
    assert new.settings["imputed_columns_source"] == "manifest"
    assert "MISSING_AT_RANDOM_ASSUMED" in _codes(caught)
    male = _row(new, "P(SEX = Male)")
    obs = df["SEX"].dropna()
    assert male["estimate_orig"] == pytest.approx(float((obs == "Male").mean()), abs=1e-15)
    assert (new.overlap["overlap"] > 0.3).all()
    assert new.mean_overlap > 0.6


# ------------------------------------------------------------------------------ CLI
def test_cli_infers_and_overrides(tables, tmp_path, capsys):
    orig, syn = tables
    o = tmp_path / "orig.csv"
    orig.to_csv(o, index=False)
    paths = []
    for l in (1, 2):
        p = tmp_path / f"syn{l}.csv"
        syn.to_csv(p, index=False)
        paths.append(str(p))
    base = ["utility", str(o), *paths, "--synthesized", "SEX", "--max-order", "0"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli.main([*base, "--out", str(tmp_path / "a")])
    out = capsys.readouterr()
    assert code == 0, out.err
    d = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert d["settings"]["imputed_columns"] == ["SEX"]
    assert d["settings"]["imputed_columns_source"] == "inferred"
    assert "IMPUTED_INFERRED" in d["warnings"] and "MISSING_AT_RANDOM_ASSUMED" in d["warnings"]
    assert "imputed columns (inferred): SEX" in out.out
    ov = pd.read_csv(tmp_path / "a" / "overlap.csv").set_index("estimand")
    assert ov.loc["P(SEX = Male)", "estimate_orig"] == pytest.approx(4 / 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli.main([*base, "--imputed", "none", "--out", str(tmp_path / "b")])
    out = capsys.readouterr()
    assert code == 0, out.err
    d = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert d["settings"]["imputed_columns"] == []
    ov = pd.read_csv(tmp_path / "b" / "overlap.csv").set_index("estimand")
    assert ov.loc["P(SEX = Male)", "estimate_orig"] == pytest.approx(0.4)
    assert "P(SEX missing)" in ov.index


def test_schema_with_imputed_roles_round_trip(tables):
    """A schema given explicitly (roles) does not change what is compared."""
    orig, syn = tables
    sch = infer_schema(orig, synthesized=["SEX"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = utility_summary(orig, [syn, syn], schema=sch, propensity=PropensitySpec(max_order=0))
    assert _row(s, "P(SEX = Male)")["estimate_orig"] == pytest.approx(4 / 7, abs=1e-15)


# ------------------------------------------------------------------------------ audit
def test_audit_utility_step_compares_observed_cells(acs_dpmpm, tmp_path):
    import bayes_risk as br

    df, rel, _ = acs_dpmpm
    skip = ["identification", "posterior_identification", "attribute", "disclosure"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(df, rel, known=["SEX"], out=tmp_path / "a", random_seed=2, progressbar=False,
                       settings=br.AuditSettings(skip=skip))
        none = br.audit(df, rel, known=["SEX"], random_seed=2, progressbar=False,
                        settings=br.AuditSettings(imputed=[], skip=skip))
    step = res.step("utility")
    st = step.result.settings
    assert st["imputed_columns"] == ["MAR", "SEX", "WKL"]
    assert st["imputed_columns_source"] == "manifest"
    assert "MISSING_AT_RANDOM_ASSUMED" in step.result.warnings
    assert step.result.pmse.mean_ratio < 5 < none.step("utility").result.pmse.mean_ratio
    marg = step.extra["marginals"]
    assert "NA" not in set(marg.loc[marg["variable"] == "SEX", "value"])
    sex = marg[(marg["variable"] == "SEX")].set_index("value")
    obs = df["SEX"].dropna()
    assert sex.loc["Male", "original"] == pytest.approx(100 * float((obs == "Male").mean()))
    assert sex["synthetic"].sum() == pytest.approx(100.0)
    old = none.step("utility").extra["marginals"]
    assert "NA" in set(old.loc[old["variable"] == "SEX", "value"])
    md = res.to_markdown(tmp_path / "report.md").read_text()
    assert "Imputed columns (manifest): MAR, SEX, WKL" in md
    with pytest.raises(SchemaError, match="imputed: column 'SX'"):
        br.audit(df, rel, known=["SEX"], progressbar=False,
                 settings=br.AuditSettings(imputed=["SX"], skip=skip))


def test_cli_imputed_argument():
    from bayes_risk._specs import argument_values
    from bayes_risk.utility import utility_summary

    def given(values):  # --imputed as the command line passes it on
        return argument_values(utility_summary, {"imputed": values}).get("imputed", "auto")

    assert given(None) == "auto"
    assert given(["none"]) == [] and given(["None"]) == []
    assert given(["SEX", "MAR"]) == ["SEX", "MAR"]


def test_summary_names_the_combining_rules_used():
    """The summary's note says which combining rules made the intervals (it always said
    Reiter's 2003 rules), with the same sentence as the command's printout and the report."""
    from bayes_risk.data import make_ce_like

    d = make_ce_like(200, random_seed=1)
    rng = np.random.default_rng(0)
    syn = [d.assign(Income=d["Income"] * np.exp(rng.normal(0, 0.2, len(d)))) for _ in range(3)]
    for rules, ref in (("partial", "Reiter (2003)"), ("full-same-n", "Raab, Nowok & Dibben")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = utility_summary(d, syn, categorical=["Urban", "Marital", "Tenure"], random_seed=1,
                                propensity=PropensitySpec(max_order=0),
                                overlap=OverlapSpec(rules=rules))
        notes = s.comparison_notes()
        assert notes[0].startswith(f"Combining rules: {rules} (") and ref in notes[0]
        assert notes[0] in s.summary().as_text()
        assert "Reiter's (2003) rules" not in s.summary().as_text()
