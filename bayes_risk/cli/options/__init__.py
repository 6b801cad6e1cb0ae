"""The options of ``bayes-risk fit`` that the built-in models declare, one module per family.

Each module holds a tuple of :class:`bayes_risk.registry.ModelOption` per model, registered
under the model's name in the entry-point group ``bayes_risk.fit_options`` (``pyproject.toml``),
as a model of another distribution registers its own. The modules import nothing but
:mod:`bayes_risk.registry`, so that the parser is built without importing a model (or PyMC);
``tests/cli/test_fit_cli.py`` checks every option against its model's ``__init__``.
"""
