"""Machinery shared by the Bayesian synthesizers (DPMPM, Poisson mixture, sequential regression).

``base`` holds :class:`BayesianSynthesizer`, the template the three families build on; its
methods call the module-level helpers of ``records`` (the fitted table, record selections, draw
indices), ``sampling`` (``pm.sample`` and the Gibbs loop), ``convergence`` (R-hat, ESS, automatic
sampling),
``io`` (NetCDF + JSON persistence), ``synthesis`` (drawing synthetic datasets), ``gibbs`` (the
Gibbs runner), ``timing`` (what a fit records of its cost, for the estimate of the stabilised
estimator's refits), ``sticks`` / ``stick_kernels`` (truncated stick-breaking) and ``design``
(design matrices of the regression-type models).
"""
