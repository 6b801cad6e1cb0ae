"""What the report withholds, every file of the audit folder and report.zip withhold too: one
rule, applied where the steps write their tables (issue 64.4)."""

from __future__ import annotations

import ast
import re
import warnings
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.auditing.confidential import FILES, WITHHELD

KNOWN = ["Age", "Urban", "Marital"]
#: the original's largest and smallest Income, values no synthetic dataset holds
TOP, BOTTOM = 9876543.21, -987654.32


@pytest.fixture(scope="module")
def release():
    from bayes_risk.data import make_ce_like
    from bayes_risk.models import CARTSynthesizer

    df = make_ce_like(n=600, random_seed=11)
    train, hold = df.iloc[:300].reset_index(drop=True), df.iloc[300:].reset_index(drop=True)
    train.loc[0, "Income"], train.loc[1, "Income"] = TOP, BOTTOM
    schema = br.infer_schema(train, categorical=["Urban", "Marital", "Tenure"])
    syn = CARTSynthesizer().fit(train, schema=schema, synthesized=["Tenure", "Income"],
                                random_seed=1).synthesize(2, random_seed=2)
    # CART releases donors' values: the two extremes are kept out of the release, so that any
    # file holding them holds the original's
    datasets = [z.assign(Income=z["Income"].replace({TOP: 12345.0, BOTTOM: 54321.0}))
                for z in syn]
    assert not any(z["Income"].isin([TOP, BOTTOM]).any() for z in datasets)
    return train, hold, datasets, schema


def _audit(release, out: Path, show: bool = False):
    train, hold, datasets, schema = release
    settings = br.AuditSettings(skip=["identification", "posterior_identification",
                                      "attribute", "membership", "disclosure"],
                                show_confidential_values=show)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.audit(train, datasets, known=KNOWN, schema=schema, settings=settings,
                        holdout=hold, random_seed=1, progressbar=False, out=out)


def _texts(res, folder: Path) -> dict[str, str]:
    """Every file of the audit folder and of its zip, as text (figures as bytes decoded)."""
    res.to_html(folder / "report.html", bundle="report.zip")
    res.to_markdown(folder / "report.md", bundle="report.zip")
    res.to_zip(folder / "report.zip")
    out = {str(p.relative_to(folder)): p.read_bytes().decode("utf-8", "replace")
           for p in folder.rglob("*") if p.is_file() and p.suffix not in (".zip", ".png")}
    with zipfile.ZipFile(folder / "report.zip") as z:
        out.update({f"zip:{n}": z.read(n).decode("utf-8", "replace") for n in z.namelist()
                    if not n.endswith(".png")})
    return out


@pytest.fixture(scope="module")
def audited(release, tmp_path_factory):
    folder = tmp_path_factory.mktemp("confidential") / "a"
    return _audit(release, folder), folder


def _singling(res) -> list[str]:
    """The predicates that single out a record of the original or of the holdout (in memory,
    where nothing is withheld)."""
    q = res.step("attacks").result["singling_out"].queries
    hit = q["singles_out_original"].astype(bool) | q["singles_out_holdout"].fillna(False).astype(
        bool)
    return q.loc[hit, "query"].tolist()


def test_no_file_nor_the_zip_holds_a_predicate_that_singles_out_a_record(audited):
    res, folder = audited
    secret = _singling(res)
    assert len(secret) > 20  # the test has something to find
    texts = _texts(res, folder)
    assert "zip:report/attacks/singling_out_queries.csv" in texts
    # a whole predicate, not a term of a longer one (which singles out no record)
    for name, text in texts.items():
        text = re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+", "", text)  # the figures
        leaked = [q for q in set(secret) if q in text and re.search(
            rf"(?<!& ){re.escape(q)}(?! &)", text) is not None]
        assert not leaked, (name, leaked[:3])
    # the file keeps every predicate's row: the text of those that single out is withheld
    q = pd.read_csv(folder / "attacks" / "singling_out_queries.csv")
    hit = q["singles_out_original"].astype(bool) | q["singles_out_holdout"].astype(bool)
    assert (q.loc[hit, "query"] == WITHHELD).all() and hit.sum() == len(secret)
    assert (q.loc[~hit, "query"] != WITHHELD).all() and (~hit).any()


def test_no_file_holds_the_originals_smallest_or_largest_value(audited):
    res, folder = audited
    for name, text in _texts(res, folder).items():
        for v in (TOP, BOTTOM):
            assert repr(v) not in text and f"{v:g}" not in text, (name, v)
    # compare()'s histogram: bins of R's pretty breaks around them, percentages only
    marg = pd.read_csv(folder / "utility" / "marginals.csv")
    inc = marg[marg["variable"] == "Income"]
    assert inc["value"].astype(float).min() < BOTTOM and inc["original"].notna().all()


def test_show_confidential_values_writes_them(release, tmp_path):
    res = _audit(release, tmp_path / "a", show=True)
    q = pd.read_csv(tmp_path / "a" / "attacks" / "singling_out_queries.csv")
    assert WITHHELD not in set(q["query"]) and set(_singling(res)) <= set(q["query"])


def test_every_table_a_step_writes_goes_through_the_rule():
    """Every ``.csv`` an audit step names is classified in FILES, and no step module writes a
    table but through ``write_table``."""
    import bayes_risk.auditing as pkg

    root = Path(pkg.__file__).parent
    named: set[str] = set()
    for path in root.glob("*.py"):
        src = path.read_text()
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named |= set(re.findall(r"^([A-Za-z_]+\.csv)$", node.value))
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                fn = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                assert fn not in ("to_csv", "write_csv") or path.name == "context.py", (
                    path.name, node.lineno)
    assert named and named <= set(FILES), named - set(FILES)


def test_an_unclassified_table_is_an_error():
    from bayes_risk.auditing.confidential import withheld

    with pytest.raises(KeyError):
        withheld(pd.DataFrame({"x": [1]}), "new_table.csv", False)
    assert withheld(pd.DataFrame({"variable": ["a"], "value": ["1"], "original": [3.0],
                                  "synthetic": [2.0]}),
                    "marginals.csv", False)["original"].iloc[0] == 3.0
