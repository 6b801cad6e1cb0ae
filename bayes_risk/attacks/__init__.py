"""anonymeter's attacks on a synthetic release (Giomi et al. 2023): :doc:`/methods/attacks`."""

from __future__ import annotations

from bayes_risk._attack_specs import GuessSpec, PredicateSpec
from bayes_risk.attacks.inference import inference_risk
from bayes_risk.attacks.linkability import linkability_risk
from bayes_risk.attacks.singling_out import singling_out_risk
from bayes_risk.results.attacks import InferenceResult, LinkabilityResult, SinglingOutResult

__all__ = ["singling_out_risk", "linkability_risk", "inference_risk", "PredicateSpec",
           "GuessSpec", "SinglingOutResult", "LinkabilityResult", "InferenceResult"]
