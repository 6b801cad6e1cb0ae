"""anonymeter's attacks on a synthetic release (Giomi et al. 2023): singling out and
linkability, each read against the same attack on a holdout (records the synthesis did not use)
and a baseline of random guesses (methods page, Singling out and linkability).

* :func:`singling_out_risk` — predicates that isolate one person
  (:mod:`bayes_risk.attacks.singling_out`, :mod:`bayes_risk.attacks.predicates`);
* :func:`linkability_risk` — two tables about the same people linked through nearest synthetic
  rows (:mod:`bayes_risk.attacks.linkability`);
* :mod:`bayes_risk.attacks.rates` — the Wilson success rates and the risk read from them.
"""

from __future__ import annotations

from bayes_risk.attacks.linkability import linkability_risk
from bayes_risk.attacks.singling_out import singling_out_risk
from bayes_risk.results.attacks import LinkabilityResult, SinglingOutResult

__all__ = ["singling_out_risk", "linkability_risk", "SinglingOutResult", "LinkabilityResult"]
