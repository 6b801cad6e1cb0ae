"""Identification disclosure risk of partially synthetic data (SPEC §4).

* :func:`identification_risk` — match probabilities, declared matches, record- and file-level
  measures (pooled or per dataset; intruder knows membership or not).
* :func:`radius_sweep` — risk over a grid of radii and the maximising radius (SPEC §4.8).

Modules: ``matching`` (match rules, §4.3), ``loglinear`` (population counts by IPF, §4.9),
``engine`` (hashed/sorted matching, pooled sparse probabilities, §4.4–§4.6), ``summary``
(measures, §4.7), ``radius`` (sweep and plot), ``api`` (the public functions).
"""

from bayes_risk.identification.api import IdentificationResult, identification_risk, radius_sweep
from bayes_risk.identification.radius import RadiusSweepResult

__all__ = ["identification_risk", "radius_sweep", "IdentificationResult", "RadiusSweepResult"]
