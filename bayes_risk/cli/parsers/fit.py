"""Arguments of ``bayes-risk fit`` (run: :mod:`bayes_risk.cli.fit`).

Model-specific options are declared here, once per flag, with the models they apply to
(:data:`MODEL_OPTIONS`): declaring them in the model classes would import every model (and
PyMC) to build the parser. ``tests/cli/test_fit_cli.py`` checks each declaration against the
model's ``__init__`` (setting name, choices).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from bayes_risk.cli._common import (
    RECORDS_HELP,
    add_out_argument,
    add_quiet_argument,
    add_seed_argument,
    add_type_arguments,
)
from bayes_risk.cli.parsers import Handler

__all__ = ["add_parser", "BAYESIAN_MODELS", "FIT_METHODS", "MODEL_OPTIONS", "ModelOption",
           "TREE_MODELS"]

#: registry names of the built-in Bayesian models (fitted by MCMC)
BAYESIAN_MODELS: tuple[str, ...] = ("dpmpm", "poisson-mixture", "regression")
#: registry names of the built-in synthesizers without MCMC
TREE_MODELS: tuple[str, ...] = ("cart", "rf", "pmm")
#: the built-in ``--method`` values of ``fit`` (any name registered in the entry-point group
#: ``bayes_risk.synthesizers`` is accepted: bayes_risk.registry)
FIT_METHODS: tuple[str, ...] = BAYESIAN_MODELS + TREE_MODELS


@dataclass(frozen=True)
class ModelOption:
    """A model-specific option of ``bayes-risk fit``.

    Parameters
    ----------
    flag : str
        Option string, e.g. ``"--components"``.
    setting : str
        Name of the models' ``__init__`` setting the value is passed to.
    models : tuple of str
        The built-in ``--method`` values (registry names) that take the option, for help texts
        and messages: the option reaches any model whose ``__init__`` takes ``setting``
        (cli.fit), a model registered by another distribution included.
    help : str
        Help text.
    kwargs : dict
        Further :meth:`argparse.ArgumentParser.add_argument` keywords (``type``, ``nargs``,
        ``choices``, ``metavar``). Never ``default``: "not given" means the model's default.
    """

    flag: str
    setting: str
    models: tuple[str, ...]
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        """``argparse`` destination (``--synthesis-mode`` → ``model_opt_synthesis_mode``)."""
        return "model_opt_" + self.flag.lstrip("-").replace("-", "_")


_MIX = ("dpmpm", "poisson-mixture")
MODEL_OPTIONS: tuple[ModelOption, ...] = (
    ModelOption("--components", "n_components", _MIX,
                "truncation level K of the mixture (dpmpm default 50)",
                {"type": int, "metavar": "K"}),
    ModelOption("--synthesis-mode", "synthesis_mode", _MIX,
                "dpmpm: marginal (full synthesis default), conditional_us (partial synthesis "
                "default) or posterior_class; poisson-mixture mp: marginal (class P) or "
                "posterior_class (class O)",
                {"choices": ["marginal", "conditional_us", "posterior_class"]}),
    ModelOption("--sampler", "sampler", _MIX, "gibbs (default) or nuts",
                {"choices": ["gibbs", "nuts"]}),
    ModelOption("--alpha-prior", "alpha_prior", ("dpmpm",),
                "dpmpm: Gamma(shape, rate) prior of the concentration (default 0.25 0.25)",
                {"type": float, "nargs": 2, "metavar": ("SHAPE", "RATE")}),
    ModelOption("--dirichlet-prior", "dirichlet_prior", ("dpmpm",),
                "dpmpm: Dirichlet parameter of the category probabilities (default 1)",
                {"type": float, "metavar": "A"}),
    ModelOption("--structural-zeros", "structural_zeros", ("dpmpm",),
                "dpmpm: CSV of impossible combinations (structural zeros; NPBayesImputeCat's "
                "MCZ format: one pattern per row, an empty field = any level). They get "
                "probability zero in the model, the synthetic data and the risk likelihoods; "
                "the table is saved in the model folder",
                {"metavar": "FILE"}),
    ModelOption("--thin", "thin", ("dpmpm",),
                "dpmpm Gibbs sampler: sweeps per kept draw after the warm-up (default 5 when "
                "--draws is not given, else 1)", {"type": int, "metavar": "T"}),
    ModelOption("--max-sweeps", "max_sweeps", ("dpmpm",),
                "dpmpm Gibbs sampler: most sweeps per chain (warm-up included) of a run that "
                "extends itself, doubling its window and thinning, until its convergence "
                "checks pass or its chains stay apart (default 50000 when --draws is not "
                "given, else 0; 0: none)",
                {"type": int, "metavar": "N"}),
    ModelOption("--alpha-warmup-bound", "alpha_warmup_bound", ("dpmpm",),
                "dpmpm Gibbs sampler: upper bound of the concentration α in the first warm-up "
                "sweeps of each chain (default: the 95 %% quantile of its prior, 4.9 for the "
                "default prior); the kept draws are never bounded",
                {"type": float, "metavar": "B"}),
    ModelOption("--alpha-warmup-sweeps", "alpha_warmup_sweeps", ("dpmpm",),
                "dpmpm Gibbs sampler: warm-up sweeps per chain with α bounded (default 100; "
                "0: no bound)", {"type": int, "metavar": "W"}),
    ModelOption("--starts", "starts", ("dpmpm", "poisson-mixture"),
                "Gibbs sampler: how each chain starts, cycled over the chains: spread (every "
                "class occupied), few (3 classes) or prior (a prior draw); default "
                "overdispersed (dpmpm: spread, few, prior; poisson-mixture: prior, spread, "
                "few), so that the chains come from both ends of the number of classes",
                {"nargs": "+", "metavar": "KIND",
                 "choices": ["overdispersed", "spread", "few", "prior"]}),
    ModelOption("--temperatures", "temperatures", ("dpmpm",),
                "dpmpm Gibbs sampler: replicas of each chain's parallel-tempering ladder "
                "(default 1: none); T >= 2 also estimates each chain's marginal likelihood "
                "(which regime carries the posterior mass) at about T times the sweeps",
                {"type": int, "metavar": "T"}),
    ModelOption("--variant", "variant", ("poisson-mixture",),
                "poisson-mixture: mp (mixture of Poissons), mm (totals preserved) or tcmm "
                "(tail-collapsed MM, provisional)", {"choices": ["mp", "mm", "tcmm"]}),
    ModelOption("--q", "q", ("poisson-mixture",),
                "poisson-mixture tcmm: tail quantile q in (0, 1]",
                {"type": float, "metavar": "Q"}),
    ModelOption("--order", "order", ("regression",),
                "regression: visit order of the synthesized columns",
                {"nargs": "+", "metavar": "COL"}),
    ModelOption("--family", "families", ("regression",),
                "regression: GLM family per column, COL=FAMILY with FAMILY one of "
                "bernoulli_logit, categorical, multinomial_logit, normal, poisson_log",
                {"nargs": "+", "metavar": "COL=FAMILY"}),
    ModelOption("--formula", "formulas", ("regression",),
                "regression: predictors of a column as 'y ~ a + b' (main effects only)",
                {"nargs": "+", "metavar": "FORMULA"}),
    ModelOption("--min-leaf", "min_leaf", ("cart",),
                "cart: minimum records per leaf (default 5)", {"type": int, "metavar": "N"}),
    ModelOption("--max-depth", "max_depth", ("cart",), "cart: maximum tree depth",
                {"type": int, "metavar": "N"}),
    ModelOption("--min-deviance", "min_deviance", ("cart",),
                "cart: do not split nodes with deviance below F x root deviance (default 0)",
                {"type": float, "metavar": "F"}),
    ModelOption("--prune-to-diversity", "prune_to_diversity", ("cart",),
                "cart: collapse leaves until each holds at least K distinct values",
                {"type": int, "metavar": "K"}),
    ModelOption("--n-trees", "n_trees", ("rf",), "rf: trees per forest (default 500)",
                {"type": int, "metavar": "N"}),
    ModelOption("--identifying", "identifying", ("pmm",),
                "pmm: identifying variables defining the cells (required with --method pmm)",
                {"nargs": "+", "metavar": "COL"}),
    ModelOption("--threshold", "threshold", ("pmm",),
                "pmm: cells with count <= N are sensitive (default 5)",
                {"type": int, "metavar": "N"}),
    ModelOption("--posterior-method", "posterior_method", ("regression",),
                "regression: auto (exact for normal, NUTS for GLMs), exact, nuts, laplace",
                {"choices": ["auto", "exact", "nuts", "laplace"]}),
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk fit``."""
    p = subparsers.add_parser(
        "fit",
        help="fit a synthesis model (DPMPM, Poisson mixture, regressions, CART, random forest, "
             "PMM) and save it",
        description=(
            "Fit a Bayesian synthesis model to a confidential table and save it as a folder "
            "(posterior.nc: posterior draws as NetCDF; model.json: settings and schema; for "
            "partial synthesis also the confidential data). The folder is confidential. "
            "Then run 'bayes-risk synthesize --model DIR -m 5 --out SYN_DIR'. With --method "
            "cart, rf or pmm the folder holds the fitted trees (arrays.npz), model.json and the "
            "confidential data (data.parquet). With --method "
            "dpmpm every modelled column is categorical (the only type DPMPM models), "
            "integer-coded ones included, so no --categorical list is needed."
        ),
    )
    p.add_argument("original", metavar="ORIGINAL", help="confidential table (.csv or .parquet)")
    # no argparse choices: any registered synthesizer is accepted (bayes_risk.registry), and an
    # unknown name gets the registry's error listing the registered ones
    p.add_argument("--method", default=None, metavar="NAME",
                   help=f"synthesis model (required): {', '.join(FIT_METHODS)}, or a model "
                        "registered in the entry-point group bayes_risk.synthesizers (docs: "
                        "'Adding a model'); --synthesize is required for cart and rf, "
                        "--identifying for pmm")
    p.add_argument("--columns", nargs="+", default=None, metavar="COL",
                   help="columns to model (default: all)")
    p.add_argument("--synthesize", nargs="+", default=None, metavar="COL",
                   help="columns to synthesize (default: all modelled columns = full synthesis)")
    p.add_argument("--records", default=None, metavar="RANGE|FILE",
                   help="partial synthesis of selected records: only their --synthesize "
                        "columns are replaced, the other records are released unchanged (the "
                        f"model is still fitted to every record); {RECORDS_HELP}")
    add_type_arguments(p, fits=True)
    g = p.add_argument_group("MCMC")
    # default None: the model's own defaults (DPMPM: 2 parallel chains, 1000 warm-up sweeps
    # + 500 draws kept every 5th sweep)
    g.add_argument("--tune", type=int, default=None,
                   help="burn-in iterations per chain (model default; dpmpm 1000, others 500)")
    g.add_argument("--draws", type=int, default=None,
                   help="kept iterations per chain (model default; dpmpm 500, each the last "
                        "of 5 sweeps, see --thin; others 1000)")
    g.add_argument("--chains", type=int, default=None,
                   help="number of chains (model default; dpmpm 2, others 1)")
    g.add_argument("--cores", type=int, default=None,
                   help="processes running chains in parallel (model default; dpmpm: one per "
                        "chain up to the CPUs when the run is long enough to gain from "
                        "them, else in turn; others 1)")
    add_seed_argument(p, default=None)
    add_quiet_argument(p)
    add_out_argument(p, "model folder: model.json + posterior.nc (Bayesian) or arrays.npz + "
                        "data.parquet (cart, rf, pmm)")
    mg = p.add_argument_group("model-specific options")
    for opt in MODEL_OPTIONS:
        action = mg.add_argument(opt.flag, dest=opt.dest, default=argparse.SUPPRESS,
                                 help=opt.help, **opt.kwargs)
        # the model's messages name the setting; the command line's, the option
        action.library_names = (opt.setting,)
    p.set_defaults(handler=Handler("bayes_risk.cli.fit"))
    return p
