"""Options of ``bayes-risk fit`` declared by the tree synthesizers and PMM
(:class:`bayes_risk.models.CARTSynthesizer`, :class:`~bayes_risk.models.RandomForestSynthesizer`,
:class:`~bayes_risk.models.SmallCellPMMSynthesizer`)."""

from __future__ import annotations

from bayes_risk.registry import ModelOption

__all__ = ["CART", "PMM", "RF"]

CART: tuple[ModelOption, ...] = (
    ModelOption("--min-leaf", "min_leaf", "minimum records per leaf (default 5)",
                {"type": int, "metavar": "N"}),
    ModelOption("--max-depth", "max_depth", "maximum tree depth", {"type": int, "metavar": "N"}),
    ModelOption("--min-deviance", "min_deviance",
                "do not split nodes with deviance below F x root deviance (default 0)",
                {"type": float, "metavar": "F"}),
    ModelOption("--prune-to-diversity", "prune_to_diversity",
                "collapse leaves until each holds at least K distinct values",
                {"type": int, "metavar": "K"}),
)

RF: tuple[ModelOption, ...] = (
    ModelOption("--n-trees", "n_trees", "trees per forest (default 500)",
                {"type": int, "metavar": "N"}),
    ModelOption("--min-samples-leaf", "min_samples_leaf",
                "minimum distinct in-bag records per leaf (default 1)",
                {"type": int, "metavar": "N"}),
    ModelOption("--donor", "donor",
                "numeric columns: leaf donors by bootstrap count (uniform, the forest's "
                "distribution; default) or Bayesian bootstrap weights",
                # spelled as `synthesize --donor` spells it; the setting's own spelling is kept
                {"type": lambda v: v.replace("-", "_"), "choices": ["uniform", "bayes_bootstrap"],
                 "metavar": "{uniform,bayes-bootstrap}"}),
    ModelOption("--smoothing", "smoothing",
                "numeric columns: draw from a truncated Gaussian kernel density of the leaf's "
                "donors instead of a donor's value (needs --min-samples-leaf 2 or more)",
                {"action": "store_true"}),
)

PMM: tuple[ModelOption, ...] = (
    ModelOption("--identifying", "identifying",
                "identifying variables defining the cells (required with --method pmm)",
                {"nargs": "+", "metavar": "COL"}),
    ModelOption("--threshold", "threshold", "cells with count <= N are sensitive (default 5)",
                {"type": int, "metavar": "N"}),
)
