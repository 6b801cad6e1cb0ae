"""synthpop syn() objects saved by R (synthpop_rds/, made by its make_fixture.R with synthpop
1.9-2): read with their datasets and synthesis specification, and used by the commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.cli import main
from bayes_risk.data.synthpop_rds import read_synthpop
from bayes_risk.exceptions import ValidationError

HERE = Path(__file__).parent / "synthpop_rds"


def test_the_syn_object_is_read_whole():
    """The m = 2 datasets (the first equal to R's write.csv of syn[[1]], factors as their
    levels' numbers), the methods per column (Tenure's cart drawn by sample as synthpop draws
    the first visited column), the visit sequence, the predictor matrix as each visited
    column's predictors, the seed; the roles are the visited columns."""
    rel = read_synthpop(HERE / "syn.rds")
    assert len(rel.datasets) == 2 and rel.method == "synthpop"
    pd.testing.assert_frame_equal(rel.datasets[0], pd.read_csv(HERE / "syn1.csv"),
                                  check_dtype=False)
    st = rel.settings
    assert st["methods"] == {"Age": "", "Urban": "", "Tenure": "sample", "Educ": "",
                             "Expenditure": "", "Marital": "cart", "Income": "normrank"}
    assert st["visit_sequence"] == ["Tenure", "Marital", "Income"]
    assert st["predictor_matrix"] == {"Tenure": [], "Marital": ["Tenure"],
                                      "Income": ["Tenure", "Marital"]}
    assert st["m"] == 2 and st["seed"] == [7.0] and st["proper"] is False
    assert rel.schema.synthesized == ["Tenure", "Marital", "Income"]
    assert set(rel.schema.categorical) == {"Urban", "Tenure", "Marital"}
    # .RData: the syn() object found among the file's objects
    rd = read_synthpop(HERE / "syn.RData")
    assert rd.extra["object"] == "s"
    pd.testing.assert_frame_equal(rd.datasets[1], rel.datasets[1])
    # m = 1: syn is a data frame; every column synthesized
    one = read_synthpop(HERE / "syn_m1.rds")
    assert len(one.datasets) == 1 and len(one.schema.synthesized) == 7


def test_what_is_not_a_syn_object_is_refused(tmp_path):
    with pytest.raises(ValidationError, match=r"holds no synthpop syn\(\) object.*DataFrame") as e:
        read_synthpop(HERE / "data_frame.rds")
    assert e.value.code == "NOT_SYNTHPOP"
    with pytest.raises(ValidationError, match="no synthpop object named 'other'") as e:
        read_synthpop(HERE / "syn.RData", object_name="other")
    assert e.value.code == "NOT_SYNTHPOP"
    bad = tmp_path / "broken.rds"
    bad.write_bytes(b"not R at all")
    with pytest.raises(ValidationError, match="could not be read as an R file") as e:
        read_synthpop(bad)
    assert e.value.code == "FILE_UNREADABLE"
    with pytest.raises(ValidationError, match="give it alone") as e:
        br.read_synthetic([HERE / "syn.rds", HERE / "syn1.csv"])
    assert e.value.code == "NOT_A_RELEASE"


def test_commands_read_the_syn_object(tmp_path):
    """utility, identification and the audit take the .rds file as the release: its datasets
    and roles (the synthesized columns named by the file, not inferred)."""
    orig = HERE / "original.csv"
    out = tmp_path / "u"
    assert main(["utility", str(orig), str(HERE / "syn.rds"), "--categorical", "Urban",
                 "Marital", "Tenure", "--max-order", "0", "--out", str(out), "--quiet"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["synthesized"] == ["Tenure", "Marital", "Income"] and not s["synthesized_inferred"]
    assert s["m"] == 2
    ident = tmp_path / "i"
    assert main(["identification", str(orig), str(HERE / "syn.RData"),
                 "--known-unsynthesized", "Age", "Urban", "--known-synthesized", "Marital",
                 "--categorical", "Urban", "Marital", "Tenure",
                 "--out", str(ident), "--quiet"]) == 0
    assert (ident / "summary.json").exists()
    audit = tmp_path / "a"
    assert main(["audit", str(orig), str(HERE / "syn.rds"), "--known", "Age", "Urban",
                 "Marital", "--skip", "identification", "posterior_identification",
                 "disclosure", "--out", str(audit), "--quiet"]) == 0
    assert "synthesized: Tenure, Marital, Income" in (audit / "report.md").read_text()
    shutil.rmtree(tmp_path)
