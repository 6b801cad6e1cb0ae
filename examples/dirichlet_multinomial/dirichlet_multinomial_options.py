"""The option of ``bayes-risk fit`` that the Dirichlet–multinomial model declares.

A module of its own that imports nothing but ``bayes_risk.registry``: the command line reads it
to build the parser of ``fit`` without importing the model (or numpy). It is registered under
the model's name in the entry-point group ``bayes_risk.fit_options`` (``pyproject.toml``).
"""

from bayes_risk.registry import ModelOption

OPTIONS = (
    ModelOption("--alpha", "alpha",
                "concentration of the symmetric Dirichlet prior on the cell probabilities "
                "(default 1)", {"type": float, "metavar": "A"}),
)
