"""Progress in Jupyter without ipywidgets (issue 48 item 7): rich's bars rendered as empty
``<pre>`` outputs and warned ``install "ipywidgets"`` at every refresh (102 times in ``fit``,
874 in ``attribute_risk``). The package's bars now show as plain lines of text there, and
rich's warning is never raised. A notebook is executed in a real kernel (nbclient)."""

from __future__ import annotations

import importlib.util
import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

CELLS = [
    # rich's warning is shown whenever it is raised (a notebook shows a warning once per place)
    "import warnings\n"
    "import bayes_risk as br\n"
    "from bayes_risk import _terminal\n"
    "from bayes_risk.models import DPMPM, Sampling\n"
    "warnings.simplefilter('always')\n"
    "print(_terminal.bar_style())",
    "df = br.make_acs_like(60, random_seed=3)[['SEX', 'RACE', 'MAR', 'HICOV']]"
    ".astype('category')\n"
    "model = DPMPM(n_components=2,\n"
    "              sampling=Sampling(tune=10, draws=40, chains=2, cores=1, max_sweeps=0))\n"
    "model.fit(df, random_seed=11)\n"
    "syn = model.synthesize(2, random_seed=12)",
    "res = br.attribute_risk(df, syn, model=model, records=[0, 1], random_seed=5, "
    "estimator=br.EstimatorSpec(bootstrap=0, refit_draws=20))",
]


def _texts(cell) -> tuple[str, list[str]]:
    """A cell's stream text (stdout and stderr) and its rich displays (HTML)."""
    streams, html = [], []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            streams.append(out["text"])
        elif out["output_type"] in ("display_data", "execute_result"):
            html.append(out["data"].get("text/html", ""))
            streams.append(out["data"].get("text/plain", ""))
    return "".join(streams), html


def _stream(cell, name: str) -> str:
    """The text a cell wrote to one stream (``stdout`` or ``stderr``)."""
    return "".join(o["text"] for o in cell.get("outputs", [])
                   if o["output_type"] == "stream" and o["name"] == name)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ipywidgets") is not None,
                    reason="about a Jupyter without ipywidgets")
def test_progress_shows_in_a_notebook_without_ipywidgets(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    # the kernel in a folder outside the checkout: it imports the installed package (from the
    # checkout, a fresh clone would first compile its numba kernels: 35 s more)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    style, _ = _texts(nb.cells[0])
    assert style.strip() == "plain"
    fit, fit_html = _texts(nb.cells[1])
    attr, attr_html = _texts(nb.cells[2])
    # each bar's last line (the lines while a bar runs, 10 s apart and more, are
    # tests/test_terminal.py's): the fit's draws, and the refits' bar of attribute_risk
    # (the time taken is any: a loaded machine may need more than a minute)
    assert re.search(r"^Gibbs sweeps \(10 warm-up, then every sweep kept\): 100/100 sweeps "
                     r"in \d+:\d\d:\d\d$", fit, re.M), fit
    assert "about 2 refits of the model" in attr, attr
    assert re.search(r"^refit 2 of 2: 2/2 refits in \d+:\d\d:\d\d$", attr, re.M), attr
    # messages and bars go to the notebook's stdout: its stderr is a red block, kept for the
    # warnings (issue 66: a run extending itself read as an error there)
    assert "Gibbs sweeps" in _stream(nb.cells[1], "stdout")
    assert "refits of the model" in _stream(nb.cells[2], "stdout")
    assert "Gibbs sweeps" not in _stream(nb.cells[1], "stderr")
    # no rich display (empty <pre>), no ipywidgets warning
    assert not [h for h in fit_html + attr_html if "<pre" in h]
    assert "ipywidgets" not in fit + attr
