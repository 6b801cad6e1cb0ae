"""One design run (``bayes_risk.design``): a CE-like table of 300 records, a space of four
CART candidates (two minimum leaves, the release as synthesized and smoothed by sdc()), every
candidate audited with the audit's screens, then the fresh-seed re-audit of the one chosen.
``time_design`` is its wall time; ``track_candidates`` the candidates audited."""

from __future__ import annotations

import warnings


class Design:
    timeout = 900

    def setup(self) -> None:
        import bayes_risk as br

        self.ce = br.make_ce_like(300, random_seed=1)

    def _run(self):
        import bayes_risk as br
        from bayes_risk.designing import DesignSpace, SearchSpec

        loose = {"expected_match_rate": 0.9, "true_match_rate": 0.9, "repU": 99, "DiSCO": 99,
                 "prop_top": 0.99, "prop_evidence": 0.99}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return br.design(self.ce, known=["Age", "Urban", "Income"],
                             categorical=["Urban", "Marital", "Tenure"],
                             space=DesignSpace(columns=[["Tenure", "Income"]],
                                               knobs={"cart": {"min_leaf": [5, 40],
                                                               "smoothing": [False]}},
                                               m=[2], remedies=["none", "smooth"]),
                             settings=br.AuditSettings(thresholds=loose),
                             search=SearchSpec(screen_records=None),
                             random_seed=3, progressbar=False)

    def time_design(self) -> None:
        self._run()

    def track_candidates(self) -> int:
        return len(self._run().candidates)

    track_candidates.unit = "candidates"
