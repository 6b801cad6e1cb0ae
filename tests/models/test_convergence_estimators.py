"""The convergence report's ESS and R-hat are arviz_stats' estimators, computed without importing
arviz_stats (whose import pulls in scipy.stats; issue 15): agreement to 1e-12 on chains of every
kind (continuous, heavily tied integers, rare indicators, random walks, one and several chains,
odd lengths), and a DPMPM fit imports neither PyMC nor scipy.stats."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk.models._bayesian_convergence import (
    _fast_len,
    ess_bulk,
    ess_tail,
    rhat_rank,
)

arviz_stats = pytest.importorskip("arviz_stats")


def _reference(x: np.ndarray) -> list[float]:
    xr_ = x if x.shape[0] > 1 else x[:, : 2 * (x.shape[1] // 2)].reshape(2, -1)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [float(arviz_stats.ess(x, method="bulk")),
                float(arviz_stats.ess(x, method="tail", prob=(0.05, 0.95))),
                float(arviz_stats.rhat(xr_))]


def _ours(x: np.ndarray) -> list[float]:
    xr_ = x if x.shape[0] > 1 else x[:, : 2 * (x.shape[1] // 2)].reshape(2, -1)
    with np.errstate(all="ignore"):
        return [ess_bulk(x), ess_tail(x), rhat_rank(xr_)]


def _assert_agree(x: np.ndarray) -> None:
    for a, b in zip(_reference(x), _ours(x), strict=True):
        if np.isnan(a):
            assert np.isnan(b), (a, b)
        else:
            assert b == pytest.approx(a, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("kind", ["normal", "poisson", "walk", "rare", "ar"])
@pytest.mark.parametrize(("chains", "draws"), [(1, 4), (1, 7), (1, 1000), (2, 5), (2, 501),
                                               (4, 250)])
def test_estimators_are_arviz_stats(kind, chains, draws):
    rng = np.random.default_rng(hash((kind, chains, draws)) % 2**32)
    if kind == "normal":
        x = rng.normal(size=(chains, draws))
    elif kind == "poisson":  # many ties (occupied classes are integers)
        x = rng.poisson(3, size=(chains, draws)).astype(float)
    elif kind == "walk":  # not converged: R-hat far above 1, tiny ESS
        x = np.cumsum(rng.normal(size=(chains, draws)), axis=1)
    elif kind == "rare":
        x = (rng.random((chains, draws)) < 0.03).astype(float)
    else:
        x = np.empty((chains, draws))
        x[:, 0] = rng.normal(size=chains)
        for t in range(1, draws):
            x[:, t] = 0.9 * x[:, t - 1] + rng.normal(size=chains)
    _assert_agree(x)


@settings(max_examples=60, deadline=None)
@given(chains=st.integers(1, 3), draws=st.integers(4, 80), seed=st.integers(0, 2**31),
       levels=st.integers(1, 6))
def test_estimators_agree_on_tied_chains(chains, draws, seed, levels):
    x = np.random.default_rng(seed).integers(0, levels, size=(chains, draws)).astype(float)
    _assert_agree(x)


def test_fast_fft_length_is_fftpack_next_fast_len():
    from scipy.fftpack import next_fast_len

    for n in [*range(1, 2000), 10**6 + 7, 2**20 + 1]:
        assert _fast_len(n) == next_fast_len(n), n


def test_dpmpm_fit_imports_neither_pymc_nor_scipy_stats(tmp_path):
    code = textwrap.dedent("""
        import sys, warnings
        import numpy as np, pandas as pd
        from bayes_risk.models import DPMPM
        rng = np.random.default_rng(0)
        df = pd.DataFrame({"a": rng.choice(["x", "y"], 80), "b": rng.choice(["u", "v"], 80)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPMPM(n_components=3, tune=5, draws=10, chains=1, progressbar=False).fit(df)
        m.convergence_summary()
        m.save(sys.argv[1])
        print([k for k in ("pymc", "pytensor", "scipy.stats", "arviz_stats") if k in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], cwd=tmp_path,
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
    assert "Sequential sampling (1 chains in 1 job)" in out.stderr  # pm.sample's line
