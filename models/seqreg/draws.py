"""Posterior variable names, prior scales and Laplace draws of one regression of
:class:`~bayes_risk.models.SequentialRegression`."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, logsumexp

from bayes_risk.exceptions import CALLER, ConvergenceWarning

NAME_SEP = "__"


def draw_name(col: str, what: str) -> str:
    """The posterior variable ``what`` of column ``col``'s regression (``col__what``)."""
    return f"{col}{NAME_SEP}{what}"


def prior_sd(X: np.ndarray) -> np.ndarray:
    """Weakly-informative prior sds: 10 for the intercept, 2.5 / sd(x_j) for the others."""
    sd = X.std(axis=0)
    out = np.where(sd > 0, 2.5 / np.where(sd > 0, sd, 1.0), 2.5)
    out[0] = 10.0
    return out


def laplace_draws(fam, X, y, schema, col, H, rng) -> dict[str, np.ndarray]:
    """Normal approximation at the posterior mode (Newton's method) under the NUTS priors."""
    n, q = X.shape
    sd = prior_sd(X)
    if fam == "multinomial_logit":
        d = schema[col].n_levels
        prec = np.tile(1.0 / sd**2, d - 1)
        Y = np.zeros((n, d))
        Y[np.arange(n), y.astype(np.int64)] = 1.0

        def grad_hess(b):
            B = b.reshape(d - 1, q)
            eta = np.concatenate([np.zeros((n, 1)), X @ B.T], axis=1)
            P = np.exp(eta - logsumexp(eta, axis=1, keepdims=True))[:, 1:]
            g = ((Y[:, 1:] - P).T @ X).reshape(-1) - prec * b
            Hm = np.zeros(((d - 1) * q, (d - 1) * q))
            for a in range(d - 1):
                for c in range(d - 1):
                    w = P[:, a] * ((a == c) - P[:, c])
                    Hm[a * q:(a + 1) * q, c * q:(c + 1) * q] = (X * w[:, None]).T @ X
            return g, Hm + np.diag(prec)

        dim = (d - 1) * q
    else:
        prec = 1.0 / sd**2

        def grad_hess(b):
            eta = X @ b
            if fam == "bernoulli_logit":
                mu = expit(eta)
                w = mu * (1 - mu)
            else:  # poisson_log
                mu = np.exp(np.minimum(eta, 700))
                w = mu
            g = X.T @ (y - mu) - prec * b
            return g, (X * w[:, None]).T @ X + np.diag(prec)

        dim = q
    b = np.zeros(dim)
    if fam == "poisson_log":
        b[0] = np.log(max(float(np.mean(y)), 1e-8))
    converged = False
    for _ in range(100):
        g, Hm = grad_hess(b)
        step = np.linalg.solve(Hm, g)
        # damped Newton: halve the step until it stays finite
        t = 1.0
        while t > 1e-6 and not np.all(np.isfinite(grad_hess(b + t * step)[0])):
            t /= 2
        b = b + t * step
        if np.max(np.abs(t * step)) < 1e-10:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"Laplace approximation for {col!r}: Newton's method did not converge in 100 "
            "iterations (separation?); the draws may be poor.",
            ConvergenceWarning, skip_file_prefixes=CALLER,
        )
    _, Hm = grad_hess(b)
    L = np.linalg.cholesky(np.linalg.inv(Hm))
    draws = b[None, :] + rng.standard_normal((H, dim)) @ L.T
    if fam == "multinomial_logit":
        return {"beta": draws.reshape(H, schema[col].n_levels - 1, q)}
    return {"beta": draws}
