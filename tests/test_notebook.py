"""The example notebook runs end to end in a Jupyter kernel (nbclient) and shows what it says.

``examples/acs_attribute_risk.ipynb`` is run as a user runs it, in an IPython kernel, with its
parameters made small by a cell added after its ``parameters`` cell (papermill's convention):
every cell runs without an error, the plots are images in the outputs (drawn on the Axes the
notebook gives, or on pyplot's current ones), and the figures it prints agree with the result
objects the notebook made, recomputed here. The progress bars raise no rich/ipywidgets warning
in a kernel (their lines in a notebook without ipywidgets: tests/test_notebook_progress.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbclient
import nbformat
import pytest
from _shared import shared_path

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "acs_attribute_risk.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.example]

#: small enough for the suite: 150 persons, a short fixed run, m = 2, three truth-weighted priors
SMALL = """\
N_RECORDS = 150
MODEL_SETTINGS = {"n_components": 6}
SAMPLING = {"tune": 60, "draws": 60, "cores": 1}
M = 2
KAPPAS = [0.5, 1.5, 3]
"""

#: run after the notebook: the numbers its cells showed, from the objects they made
CHECK = """\
import json as _json
_uniform = sens[sens["prior"] == "uniform"]
_u = _uniform[_uniform["flag_codes"] == ""]
print("CHECK " + _json.dumps({
    "table": table.reset_index().to_dict(orient="list"),
    "uniform_is_top": float(_u["is_top"].mean()),
    "risk_prop_top": risk.to_dict()["unflagged"].get("prop_top"),
    "baseline": float(_uniform["baseline"].mean()),
    "n_records": len(acs), "m": release.m,
    "params": model.get_params()["n_components"],
    "clone_fitted": any(k.endswith("_") for k in vars(clone(model))),
}))
"""


@pytest.fixture(scope="module")
def executed():
    """The notebook run with the small parameters (one kernel for every check here)."""
    if not NOTEBOOK.is_file():
        pytest.skip("examples/ is not part of this checkout")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    injected = nbformat.v4.new_code_cell(SMALL)
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(at + 1, injected)
    nb.cells.append(nbformat.v4.new_code_cell(CHECK))
    env = {"BAYES_RISK_SHARED_DATA": str(shared_path("data")), "MPLBACKEND": "module://"
           "matplotlib_inline.backend_inline"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def _outputs(cell) -> list:
    return cell.get("outputs", []) if cell.cell_type == "code" else []


def _cell(nb, text: str):
    return next(c for c in nb.cells if c.cell_type == "code" and text in c.source)


def test_every_cell_runs_and_plots_are_images(executed):
    nb = executed
    errors = [o for c in nb.cells for o in _outputs(c) if o.output_type == "error"]
    assert not errors
    for marker in ('risk.plot("p_true", ax=axes[0])', "br.plot_prior_sensitivity(sens)",
                   "az.plot_trace_dist("):
        outs = _outputs(_cell(nb, marker))
        assert any("image/png" in o.get("data", {}) for o in outs), marker
    # the plot cells show their figure once, not an extra blank one
    pngs = [o for o in _outputs(_cell(nb, 'risk.plot("p_true", ax=axes[0])'))
            if "image/png" in o.get("data", {})]
    assert len(pngs) == 1
    # no progress-bar warning of rich in a kernel ('install "ipywidgets"', issue 48)
    stderr = "".join(o.get("text", "") for c in nb.cells for o in _outputs(c)
                     if o.output_type == "stream" and o.get("name") == "stderr")
    assert "ipywidgets" not in stderr, stderr


def test_printed_figures_agree_with_the_results(executed):
    nb = executed
    text = "".join(o.get("text", "") for o in _outputs(nb.cells[-1]) if o.output_type == "stream")
    got = json.loads(text.split("CHECK ", 1)[1])
    assert got["n_records"] == 150 and got["m"] == 2 and got["params"] == 6
    assert not got["clone_fitted"]  # sklearn's clone: the settings, no fitted attribute
    table = got["table"]
    assert table["prior"] == ["uniform", "empirical:1", "empirical:10", "truth-weighted:0.5",
                              "truth-weighted:1.5", "truth-weighted:3"]
    row = {p: i for i, p in enumerate(table["prior"])}
    u = row["uniform"]
    # the table's uniform row is the result's own file-level summary of the unflagged records
    assert table["ranked_first"][u] == pytest.approx(got["uniform_is_top"])
    assert table["ranked_first"][u] == pytest.approx(got["risk_prop_top"])
    # the prior alone: 1/G under the uniform prior, the truth first for every record when the
    # prior leans to it (kappa > 1), never when it leans away (kappa < 1)
    assert table["ranked_first_by_prior_alone"][u] == pytest.approx(got["baseline"])
    for p in ("truth-weighted:1.5", "truth-weighted:3"):
        assert table["ranked_first_by_prior_alone"][row[p]] == pytest.approx(1.0)
    assert table["ranked_first_by_prior_alone"][row["truth-weighted:0.5"]] == 0.0
    # the more the prior leans to the truth, the more often the truth is ranked first
    tw = [table["mean_p_true"][row[p]] for p in ("truth-weighted:0.5", "truth-weighted:1.5",
                                                  "truth-weighted:3")]
    assert tw == sorted(tw) and tw[0] < table["mean_p_true"][u] < tw[1]
