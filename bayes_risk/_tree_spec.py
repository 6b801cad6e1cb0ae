"""How the tree synthesizers grow their trees: :class:`TreeOptions` (public as
``bayes_risk.models.TreeOptions``), and the fields each synthesizer takes with its defaults.

Imports only the standard library at module level: ``bayes-risk fit`` and ``bayes-risk
synthesize`` declare their tree options from the fields (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bayes_risk._specs import GroupedSettings, cli_option

__all__ = ["TreeOptions", "CART_TREES", "FOREST_TREES"]

def _max_features(text: str) -> str | int:
    """``--max-features``: ``sqrt`` or an integer (the model checks its range)."""
    import argparse

    if text == "sqrt":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected sqrt or an integer >= 1, got {text!r}") from None


@dataclass(frozen=True, repr=False)
class TreeOptions(GroupedSettings):
    """How a tree synthesizer grows its trees, apart from how it draws from their leaves: give
    it as ``trees=TreeOptions(min_leaf=10)`` (the same fields are taken as keywords of the
    synthesizer's constructor, ``CARTSynthesizer(min_leaf=10)``, and grouped here).

    A field left at ``None`` takes the synthesizer's default (its ``tree_defaults``); a field
    the synthesizer does not grow by (``n_trees`` for CART) is refused when the synthesizer
    reads its settings (``OPTION_CONFLICT``). The synthesizer checks the values when it fits.

    Parameters
    ----------
    min_leaf : int, optional
        CART: minimum number of training records per leaf (default 5; Drechsler & Reiter 2008).
    min_deviance : float, optional
        CART: do not split a node whose deviance is below this share of the root's (R
        ``mindev``; default 0).
    max_depth : int, optional
        CART: maximum depth of each tree (default: none).
    prune_to_diversity : int, optional
        CART: collapse leaves until each holds this many distinct values (Reiter 2005; default:
        no pruning).
    n_trees : int, optional
        Random forest: trees per forest (default 500).
    max_features : "sqrt" or int, optional
        Random forest: candidate predictors per split (default ``"sqrt"``, ``floor(sqrt(p))``).
    min_samples_leaf : int, optional
        Random forest: leaf size in distinct in-bag records (default 1, grow until pure).
    oob_only : bool, optional
        Random forest: use only the trees for which the record is out of bag (default False).
    min_oob_trees : int, optional
        Random forest: with ``oob_only``, out-of-bag trees per record at least (default 100).
    procedure : {"A", "B"}, optional
        Random forest: Caiola & Reiter's procedure, forests on all other columns (A, default)
        or on the never-replaced columns and those visited before (B; every replaced column
        must have the same replaced records).
    min_group_size : int, optional
        Random forest with ``group_by``: levels with fewer replaced records use the column's
        pooled forest (default 10).

    Examples
    --------
    >>> from bayes_risk.models import TreeOptions
    >>> TreeOptions(min_leaf=10)
    TreeOptions(min_leaf=10)
    """

    min_leaf: int | None = field(default=None, metadata=cli_option(
        "--min-leaf", "minimum records per leaf (default 5)", type=int, metavar="N"))
    min_deviance: float | None = field(default=None, metadata=cli_option(
        "--min-deviance", "do not split nodes with deviance below F x root deviance "
        "(default 0)", type=float, metavar="F"))
    max_depth: int | None = field(default=None, metadata=cli_option(
        "--max-depth", "maximum tree depth (default: none)", type=int, metavar="N"))
    prune_to_diversity: int | None = field(default=None, metadata=cli_option(
        "--prune-to-diversity", "collapse leaves until each holds at least K distinct "
        "values", type=int, metavar="K"))
    n_trees: int | None = field(default=None, metadata=cli_option(
        "--n-trees", "trees per forest (default 500)", type=int, metavar="N"))
    max_features: str | int | None = field(default=None, metadata=cli_option(
        "--max-features", "candidate predictors per split, sqrt (default: floor(sqrt(p))) "
        "or an integer", type=_max_features, metavar="sqrt|N"))
    min_samples_leaf: int | None = field(default=None, metadata=cli_option(
        "--min-samples-leaf", "minimum distinct in-bag records per leaf (default 1; larger "
        "gives numeric columns more donors per leaf)", type=int, metavar="N"))
    oob_only: bool | None = field(default=None, metadata=cli_option(
        "--oob-only", "use only out-of-bag trees", action="store_true"))
    min_oob_trees: int | None = field(default=None, metadata=cli_option(
        "--min-oob-trees", "with --oob-only, out-of-bag trees per record at least "
        "(default 100)", type=int, metavar="N"))
    procedure: str | None = field(default=None, metadata=cli_option(
        "--procedure", "Caiola-Reiter procedure A (3.1-3.3, default) or B (3.1a-3.3a)",
        choices=("A", "B")))
    min_group_size: int | None = field(default=None, metadata=cli_option(
        "--min-group-size", "with --group-by, levels with fewer replaced records use the "
        "pooled forest (default 10)", type=int, metavar="N"))


#: the tree options of ``CARTSynthesizer``, with its defaults
CART_TREES: Mapping[str, Any] = MappingProxyType(
    {"min_leaf": 5, "min_deviance": 0.0, "max_depth": None, "prune_to_diversity": None})
#: the tree options of ``RandomForestSynthesizer``, with its defaults
FOREST_TREES: Mapping[str, Any] = MappingProxyType(
    {"n_trees": 500, "max_features": "sqrt", "min_samples_leaf": 1, "oob_only": False,
     "min_oob_trees": 100, "procedure": "A", "min_group_size": 10})
