"""``bayes-risk fit --method cart|rf|pmm`` then ``synthesize --model``: saved tree synthesizers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import bayes_risk.cli as cli
from bayes_risk.data import SyntheticData, infer_schema, make_ce_like
from bayes_risk.exceptions import NotFittedError
from bayes_risk.models import get_synthesizer, load_model

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    df = make_ce_like(300, random_seed=1)
    path = tmp_path_factory.mktemp("ce") / "ce.csv"
    df.to_csv(path, index=False)
    return path, pd.read_csv(path)


TYPES = ["--categorical", "Urban", "Marital", "Tenure", "Educ"]
METHODS = {
    # fit takes every option synthesize takes (one declaration, issue 65): synthpop's CART
    "cart": ["--synthesize", "Tenure", "Income", "--min-leaf", "8", "--donor", "uniform",
             "--unroutable", "random-descent"],
    "rf": ["--synthesize", "Tenure", "Marital", "--n-trees", "20"],
    "pmm": ["--identifying", "Urban", "Marital", "Tenure", "--threshold", "3", "--tie", "first"],
}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_fit_then_synthesize(tmp_path, csv, method):
    path, df = csv
    mdir, sdir = tmp_path / "model", tmp_path / "syn"
    rc = cli.main(["fit", str(path), "--method", method, *METHODS[method], *TYPES,
                   "--random-seed", "3", "--quiet", "--out", str(mdir)])
    assert rc == 0
    meta = json.loads((mdir / "model.json").read_text())
    assert meta["method"] == method and meta["format_version"] == 2 and meta["confidential"]
    rc = cli.main(["synthesize", "--model", str(mdir), "-m", "3", "--random-seed", "2",
                   "--quiet", "--out", str(sdir)])
    assert rc == 0
    syn = SyntheticData.load(sdir)
    assert syn.m == 3 and syn.method == method
    # the same synthesizer fitted in the session with the same settings and seed
    schema = infer_schema(df, categorical=TYPES[1:])
    settings = {"cart": {"min_leaf": 8, "donor": "uniform", "unroutable": "random_descent"},
                "rf": {"n_trees": 20},
                "pmm": {"identifying": ["Urban", "Marital", "Tenure"], "threshold": 3,
                        "tie": "first"}}[method]
    synthesized = {"cart": ["Tenure", "Income"], "rf": ["Tenure", "Marital"], "pmm": None}
    direct = get_synthesizer(method)(**settings, random_seed=3).fit(
        df, schema=schema, synthesized=synthesized[method], random_seed=3
    ).synthesize(3, random_seed=2)
    for a, b in zip(syn, direct, strict=True):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                      check_dtype=False, check_exact=True)
    again = load_model(mdir).synthesize(3, random_seed=2)
    for a, b in zip(again, direct, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_fit_tree_errors_and_out_policy(tmp_path, csv, capsys):
    path, _ = csv
    out = tmp_path / "m"
    rc = cli.main(["fit", str(path), "--method", "cart", *TYPES, "--quiet", "--out", str(out)])
    assert rc == 2 and "--synthesize COL" in capsys.readouterr().err
    rc = cli.main(["fit", str(path), "--method", "pmm", *TYPES, "--quiet", "--out", str(out)])
    assert rc == 2 and "--identifying COL" in capsys.readouterr().err
    rc = cli.main(["fit", str(path), "--method", "rf", *METHODS["rf"], *TYPES, "--draws", "5",
                   "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "--draws: MCMC options do not apply to --method rf" in err, err
    rc = cli.main(["fit", str(path), "--method", "cart", *METHODS["cart"], "--n-trees", "5",
                   *TYPES, "--quiet", "--out", str(out)])
    assert rc == 2 and "--n-trees: not an option of --method cart" in capsys.readouterr().err
    assert not out.exists()
    # --out: an existing non-empty folder is refused unless --overwrite, as for every command
    args = ["fit", str(path), "--method", "cart", *METHODS["cart"], *TYPES, "--quiet",
            "--random-seed", "1", "--out", str(out)]
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main(args) == 2 and "--overwrite" in capsys.readouterr().err
    assert cli.main([*args, "--overwrite"]) == 0


@pytest.fixture(scope="module", params=["cart", "rf"])
def saved_tree(request, csv, tmp_path_factory):
    """A saved CART / RF folder and its release (m = 2), fitted once for the attribute and the
    audit tests below (neither writes into these folders)."""
    method = request.param
    path, _ = csv
    root = tmp_path_factory.mktemp(f"saved_{method}")
    mdir, sdir = root / "model", root / "syn"
    extra = ["--n-trees", "20"] if method == "rf" else []
    assert cli.main(["fit", str(path), "--method", method, "--synthesize", "Tenure", "Marital",
                     *extra, *TYPES, "--random-seed", "3", "--quiet", "--out", str(mdir)]) == 0
    assert cli.main(["synthesize", "--model", str(mdir), "-m", "2", "--random-seed", "2",
                     "--quiet", "--out", str(sdir)]) == 0
    return method, mdir, sdir


def test_attribute_with_saved_tree_model(tmp_path, csv, capsys, saved_tree):
    """``attribute --model DIR`` with a saved CART / RF folder uses its plug-in likelihood: the
    same records as the synthesizer rebuilt from the release's manifest."""
    path, df = csv
    _, mdir, sdir = saved_tree
    common = ["--records", "0-9", "--random-seed", "4", "-q"]
    assert cli.main(["attribute", str(path), str(sdir), "--model", str(mdir), *common,
                     "--out", str(tmp_path / "a1")]) == 0
    assert cli.main(["attribute", str(path), str(sdir), *common,
                     "--out", str(tmp_path / "a2")]) == 0
    r1 = pd.read_csv(tmp_path / "a1" / "records.csv")
    r2 = pd.read_csv(tmp_path / "a2" / "records.csv")
    pd.testing.assert_frame_equal(r1, r2)
    # another original is refused by the fingerprint stored in the folder
    bad = df.copy()
    bad["Tenure"] = bad["Tenure"].iloc[::-1].to_numpy()
    bad_path = tmp_path / "bad.csv"
    bad.to_csv(bad_path, index=False)
    capsys.readouterr()
    assert cli.main(["attribute", str(bad_path), str(sdir), "--model", str(mdir), *common,
                     "--out", str(tmp_path / "a3")]) == 2
    assert "ORIGINAL" in capsys.readouterr().err and not (tmp_path / "a3").exists()


def test_audit_with_saved_tree_model(tmp_path, csv, capsys, saved_tree):
    """``audit --model DIR`` with a saved CART / RF folder runs its attribute step with the
    folder's plug-in likelihood (it failed: the raw synthesizer was passed as a model), with
    the same records as the audit that rebuilds the synthesizer from the manifest."""
    path, _ = csv
    _, mdir, sdir = saved_tree
    common = ["--known", "Age", "Urban", "Tenure", "--records", "0-9", "--skip", "utility",
              "identification", "posterior-identification", "disclosure", "--random-seed",
              "4", "-q"]
    capsys.readouterr()
    assert cli.main(["audit", str(path), str(sdir), "--model", str(mdir), *common,
                     "--out", str(tmp_path / "a1")]) == 0, capsys.readouterr().err
    assert cli.main(["audit", str(path), str(sdir), *common,
                     "--out", str(tmp_path / "a2")]) == 0
    r1 = pd.read_csv(tmp_path / "a1" / "attribute" / "records.csv")
    r2 = pd.read_csv(tmp_path / "a2" / "attribute" / "records.csv")
    pd.testing.assert_frame_equal(r1, r2)


def test_pmm_model_has_no_likelihood(tmp_path, csv, capsys):
    """A saved PMM folder given as --model to attribute or audit is refused by name
    (NO_LIKELIHOOD), nothing written."""
    path, _ = csv
    mdir, sdir = tmp_path / "model", tmp_path / "syn"
    assert cli.main(["fit", str(path), "--method", "pmm", *METHODS["pmm"], *TYPES,
                     "--random-seed", "3", "--quiet", "--out", str(mdir)]) == 0
    assert cli.main(["synthesize", "--model", str(mdir), "-m", "2", "--random-seed", "2",
                     "--quiet", "--out", str(sdir)]) == 0
    capsys.readouterr()
    for cmd in (["attribute", str(path), str(sdir), "--model", str(mdir), "--records", "0-4"],
                ["audit", str(path), str(sdir), "--model", str(mdir), "--known", "Age",
                 "--records", "0-4"]):
        out = tmp_path / cmd[0]
        assert cli.main([*cmd, "-q", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "[NO_LIKELIHOOD]" in err and "SmallCellPMMSynthesizer has no likelihood" in err, err
        assert not out.exists()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_fit_prints_the_models_own_text(tmp_path, csv, capsys, method):
    """The command prints ``model.text_lines()`` (the fitted model's words, issue 87), the same
    from the folder it saved; before the fit the model has none."""
    path, _ = csv
    mdir = tmp_path / "model"
    with pytest.raises(NotFittedError, match="text_lines"):
        get_synthesizer(method)().text_lines()
    capsys.readouterr()
    assert cli.main(["fit", str(path), "--method", method, *METHODS[method], *TYPES,
                     "--random-seed", "3", "--out", str(mdir)]) == 0
    printed = [ln.strip() for ln in capsys.readouterr().out.splitlines()]
    lines = load_model(mdir).text_lines()
    assert lines[0] == f"fitted {method} to 300 records x 7 columns"
    assert printed[:len(lines)] == lines
