"""Machinery shared by the Bayesian synthesizers (DPMPM, Poisson mixtures, regressions)."""
