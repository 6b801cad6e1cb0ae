"""anonymeter's attacks on a synthetic release (Giomi et al. 2023): :func:`singling_out_risk`
and :func:`linkability_risk`, each read against a holdout and a baseline of random guesses
(:mod:`bayes_risk.attacks.rates`; :doc:`/methods/attacks`).
"""

from __future__ import annotations

from bayes_risk.attacks.linkability import linkability_risk
from bayes_risk.attacks.singling_out import singling_out_risk
from bayes_risk.results.attacks import LinkabilityResult, SinglingOutResult

__all__ = ["singling_out_risk", "linkability_risk", "SinglingOutResult", "LinkabilityResult"]
