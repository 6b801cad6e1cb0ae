"""Arguments of ``bayes-risk fit`` (run: :mod:`bayes_risk.cli.fit`); :func:`add_model_options`
adds the models' own options (:func:`bayes_risk.registry.fit_options`), read only when ``fit``
runs or its help is asked for.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from bayes_risk._sampling_spec import Sampling
from bayes_risk.cli._common import (
    add_input_arguments,
    add_run_arguments,
    add_type_arguments,
)
from bayes_risk.cli.parsers import add_argument_options, add_spec_options

__all__ = ["add_model_options", "add_parser"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk fit``."""
    p = subparsers.add_parser("fit", help="fit a synthesis model (DPMPM, Poisson mixture, "
                              "regressions, CART, random forest, PMM, or a model of your own "
                              "written in PyMC) and save it",
                              description="Fit a Bayesian synthesis model to a confidential table "
                              "and save it as a folder (posterior.nc: posterior draws as NetCDF; "
                              "model.json: settings and schema; for partial synthesis also the "
                              "confidential data). The folder is confidential. Then run "
                              "'bayes-risk synthesize --model DIR -m 5 --out SYN_DIR'. With "
                              "--method cart, rf or pmm the folder holds the fitted trees "
                              "(arrays.npz), model.json and the confidential data (data.parquet). "
                              "With --method dpmpm every modelled column is categorical (the only "
                              "type DPMPM models), integer-coded ones included, so no "
                              "--categorical list is needed. With --method pymc "
                              "--model-function MODULE:FUNCTION the model is a function that "
                              "builds a PyMC model of the table; its observed columns are "
                              "synthesized, its likelihoods read off its graph.",
                              # whole option names only: --model would otherwise be read as
                              # --model-function (fit takes --method, not --model)
                              allow_abbrev=False)
    add_input_arguments(p, synthetic=None)
    # no argparse choices for --method: any registered synthesizer is accepted
    # (bayes_risk.registry), and an unknown name gets the registry's error listing them
    add_argument_options(p, "bayes_risk.models.fitting:fit_model")
    add_type_arguments(p, fits=True)
    # default None: the model's own defaults (DPMPM: 2 parallel chains, 1000 warm-up sweeps
    # + 500 draws kept every 5th sweep)
    add_spec_options(p, Sampling)
    add_run_arguments(p, "bayes_risk.cli.fit",
                      "model folder: model.json + posterior.nc (Bayesian) or "
                      "arrays.npz + data.parquet (cart, rf, pmm)")
    return p


def add_model_options(p: argparse.ArgumentParser, options: Any = None,
                      models: str | None = None) -> None:
    """Add the model-specific ``options`` (default: those the registered models declare,
    :func:`bayes_risk.registry.fit_options`) to the parser ``p``, in a group of their own, as
    every table of options is added (``add_argument_options``: the
    model's messages name the setting, the command line's the option); ``models``: the models
    they are of (default: every registered one)."""
    from bayes_risk.registry import MODEL_GROUP, fit_options, list_synthesizers

    # wrapped here: a parser with raw descriptions (synthesize, orders) prints it as it is
    p.add_argument_group(MODEL_GROUP, textwrap.fill(
        "Declared by each model (entry-point group bayes_risk.fit_options); an option reaches "
        "any model whose __init__ takes its setting. Registered models (--method): "
        f"{models or ', '.join(list_synthesizers())}.", 78, break_on_hyphens=False))
    add_argument_options(p, fit_options() if options is None else options)
