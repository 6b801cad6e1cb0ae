"""Options of ``bayes-risk fit`` declared by the tree synthesizers and PMM
(:class:`bayes_risk.models.CARTSynthesizer`, :class:`~bayes_risk.models.RandomForestSynthesizer`,
:class:`~bayes_risk.models.SmallCellPMMSynthesizer`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bayes_risk._specs import cli_fields
from bayes_risk._tree_spec import CART_TREES, FOREST_TREES, TreeOptions
from bayes_risk.registry import ModelOption

__all__ = ["CART", "CART_TREES_OPTIONS", "FOREST_TREES_OPTIONS", "PMM", "RF"]

def _tree_options(takes: Mapping[str, Any]) -> tuple[ModelOption, ...]:
    """The options of the tree options ``takes`` (:class:`~bayes_risk.models.TreeOptions`
    fields), as the fields declare them: ``fit`` and ``synthesize`` declare them from here."""
    out = []
    for f, opt in cli_fields(TreeOptions):
        if f.name in takes:
            kwargs = {k: v for k, v in (("metavar", opt.metavar), ("type", opt.type),
                                        ("action", opt.action)) if v}
            if opt.choices is not None:
                kwargs["choices"] = list(opt.choices)
            out.append(ModelOption(opt.flag, f.name, opt.help, kwargs))
    return tuple(out)


#: the tree options of ``--method cart`` and ``--method rf``
CART_TREES_OPTIONS = _tree_options(CART_TREES)
FOREST_TREES_OPTIONS = _tree_options(FOREST_TREES)

CART: tuple[ModelOption, ...] = CART_TREES_OPTIONS

RF: tuple[ModelOption, ...] = (
    *FOREST_TREES_OPTIONS,
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
