"""One name and one unit per quantity, in every file and in the report (issue 66 item 3).

``attribute/summary.json`` held the share ranked first as a fraction while the audit's
``summary.json`` gave it in per cent (5.67 meaning 5.67 %), neither saying which; the report's
identification section gave the expected match risk in targets where the verdict gave the rate
in per cent, and its posterior Monte Carlo table mixed rows of targets and rows of per cent. Now
every ``summary.json`` names the unit of each rate, share, probability and count of targets it
holds (``"units"``, from one catalogue: ``bayes_risk._units``); a key is one quantity in one
unit in every file, its values lie in that unit's range; the verdict lines and the thresholds
read the step files in those units; the report gives every identification measure as the
verdict does, a per cent of the targets and then its count.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from bayes_risk._units import IN_CONTEXT, units_of

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

#: keys that name a rate, a share, a probability or a risk: each needs its unit written
SHARE_LIKE = re.compile(r"rate|share|prop|pct|%|risk|p_true|probability|baseline|advantage|"
                        r"overlap|^(UiO|UiS|UiOiS|repU|Dorig|Dsyn|iS|DiS|DiSCO|DiSDiO|baseCAPd|"
                        r"CAPd|CAPs|DCAP|TCAP|auc|dcr_auc|s_pmse)$")
#: share-like names that are not quantities of people: settings, counts, tolerances
NOT_A_SHARE = {"n_high_risk", "dis_fraction", "n_baseline", "n_attacks_baseline", "mcse_tol",
               "n_p_true_above",
               "max_replicates", "min_replicates", "records_p_true_may_overstate",
               "pct_true_is_map_unique"}


@pytest.fixture(scope="module")
def audit_dir(ce_audit_with_holdout):
    """A CE-like release (CART, m = 2) audited with a holdout (anonymeter's attacks too): the
    audit of tests/conftest.py, which tests/auditing/test_worst_case.py reads too."""
    return ce_audit_with_holdout / "audit"


def _leaves(obj, holder=""):
    """``(key as units_of names it, values)`` of every number and list of numbers; a quantile
    (``"5%"``, ``"0.975"``) is its holder's quantity."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = f"{holder}.{k}" if str(k) in IN_CONTEXT.get(holder, {}) else str(k)
            flat = list(_flatten(v if isinstance(v, list) else [v]))
            if flat and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                            or x is None for x in flat):
                yield (holder if re.fullmatch(r"[\d.]+%?", key) else key), \
                    [x for x in flat if x is not None]
            else:
                yield from _leaves(v, str(k))
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v, holder)


def _flatten(xs):
    for x in xs:
        if isinstance(x, list):
            yield from _flatten(x)
        else:
            yield x


def _summaries(root):
    return {p.relative_to(root).as_posix(): json.loads(p.read_text())
            for p in sorted(root.rglob("summary.json"))}


def test_every_summary_json_names_the_unit_of_each_rate_and_share(audit_dir):
    files = _summaries(audit_dir)
    assert {"summary.json", "attribute/summary.json", "identification/summary.json",
            "posterior_identification/summary.json", "disclosure/Tenure/summary.json",
            "attacks/summary.json"} <= set(files), sorted(files)
    seen: dict[str, str] = {}
    for name, doc in files.items():
        units = doc.pop("units", {})
        assert units == units_of(doc), name
        for key, values in _leaves(doc):
            bare = key.rpartition(".")[2]
            if not SHARE_LIKE.search(bare) or bare in NOT_A_SHARE or bare.endswith("_s"):
                continue
            assert key in units, f"{name}: {key} has no unit (add it to bayes_risk._units)"
            unit = units[key]
            assert seen.setdefault(key, unit) == unit, (key, seen[key], unit)  # one unit
            finite = [float(x) for x in values if math.isfinite(float(x))]
            if unit.startswith(("fraction", "probability")):
                assert all(-1e-12 <= x <= 1 + 1e-12 for x in finite), (name, key, finite[:5])
            elif unit.startswith("per cent"):
                assert all(-1e-9 <= x <= 100 + 1e-9 for x in finite), (name, key, finite[:5])
    # the same quantity in two units, told apart: a fraction here, per cent there
    assert seen["prop_top"].startswith("fraction") and seen["DiSCO"].startswith("per cent")


def test_verdict_lines_and_thresholds_read_the_step_files_in_their_units(audit_dir):
    """Each verdict line gives its value and threshold in its ``unit`` (per cent for every
    rate); the thresholds are in the unit of the key they name, so a line's threshold is the
    threshold in the step file's unit, converted; the line's value is the step file's."""
    files = _summaries(audit_dir)
    top = files["summary.json"]
    units = top["units"]
    lines = {v["threshold_name"]: v for v in top["verdicts"]}
    for name, v in lines.items():
        t = top["thresholds"][name]
        unit = units.get(name)
        if v["unit"] == "%":
            assert unit is not None, name
            factor = 100.0 if unit.startswith("fraction") else 1.0
            assert v["threshold"] == pytest.approx(factor * t), name
        else:
            assert v["threshold"] == pytest.approx(t), name
    att = files["attribute/summary.json"]
    assert lines["prop_top"]["value"] == pytest.approx(100 * att["unflagged"]["prop_top"])
    for v in top["verdicts"]:
        if v["threshold_name"] == "DiSCO":
            target = v["measure"].rsplit("target ", 1)[1]
            means = files[f"disclosure/{target}/summary.json"]["means"]
            assert v["value"] == pytest.approx(means["DiSCO"]) and v["unit"] == "%"
    rates = [x for k, xs in _leaves(files["identification/summary.json"])
             if k == "expected_match_rate" for x in xs]
    assert any(lines["expected_match_rate"]["value"] == pytest.approx(100 * r) for r in rates)


def _text(html):
    import html as h

    return h.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_the_report_gives_each_identification_measure_in_the_verdicts_unit(audit_dir):
    html = (audit_dir / "report.html").read_text()
    ident = html.split('<section id="identification">')[1].split("</section>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", ident.split("</table>")[0], re.S)[1:]
    for row in rows:  # per cent of the targets first, then the count ("3.01 % = 30.09 of …")
        value = _text(re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[-1]).strip()
        assert re.match(r"[\d.,]+ % (= [\d.,]+ of [\d,]+ targets|of the unique matches)$",
                        value), value
    post = html.split('<section id="posterior-identification">')[1].split("</section>")[0]
    table = post.split("<table")[1].split("</table>")[0]
    cells = [_text(c).strip() for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[1:]]
    assert cells and all(c.endswith("%") or c == "—" for c in cells), cells
    assert "expected match risk (targets)" not in _text(post)
