"""Machinery shared by the Bayesian synthesizers (DPMPM, Poisson mixture, sequential regression):
``base`` (:class:`BayesianSynthesizer`, with the mixins of ``sampling``, ``convergence`` and
``io``), ``records``, ``synthesis``, ``gibbs``, ``timing``, ``sticks`` / ``stick_kernels`` and
``design``.
"""
